"""Debian's nginx running the shipped deploy/nginx/maskmail.conf as a plain process.

Only what cannot work in a test is changed: the ports (loopback), the certificate (a
fresh self-signed one for relay.example.com) and the upstream's port. Everything else,
the locations and the headers passed on included, is the file as shipped.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import h11
import httpx

from tests.support import free_port, wait_for_port

SITE = Path(__file__).parents[1] / "deploy" / "nginx" / "maskmail.conf"
HOST = "relay.example.com"


def nginx_binary() -> str:
    return shutil.which("nginx") or "/usr/sbin/nginx"


@dataclass(frozen=True)
class Nginx:
    """The ports the shipped site listens on here, and the files it runs from."""

    tmp: Path
    https_port: int
    http_port: int
    main: Path

    def _trust(self) -> ssl.SSLContext:
        trust = ssl.create_default_context(cafile=self.tmp / "cert.pem")
        trust.check_hostname = False  # the certificate names relay.example.com
        return trust

    def client(self, source: str = "127.0.0.1") -> httpx.Client:
        """An HTTPS client as a browser at ``source`` (any loopback address) would be,
        asking for relay.example.com."""
        transport = httpx.HTTPTransport(verify=self._trust(), local_address=source)
        # A sign-in costs a real argon2 hash, seconds on a loaded machine.
        return httpx.Client(
            base_url=f"https://127.0.0.1:{self.https_port}",
            transport=transport,
            headers={"Host": HOST},
            timeout=60,
        )

    def get_as_sent(self, target: str, source: str, headers: dict[str, str]) -> tuple[int, bytes]:
        """GET ``target`` exactly as written (httpx would drop dot segments and take
        ``//x`` for a host): the status and the body."""
        conn = h11.Connection(our_role=h11.CLIENT)
        sent = [("Host", HOST), ("Connection", "close"), *headers.items()]
        request = h11.Request(method="GET", target=target.encode("ascii"), headers=sent)
        with (
            socket.create_connection(
                ("127.0.0.1", self.https_port), timeout=30, source_address=(source, 0)
            ) as raw,
            self._trust().wrap_socket(raw) as tls,
        ):
            tls.sendall(conn.send(request) + conn.send(h11.EndOfMessage()))
            status, body = 0, b""
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(tls.recv(65536))
                elif isinstance(event, h11.Response):
                    status = event.status_code
                elif isinstance(event, h11.Data):
                    body += bytes(event.data)
                elif isinstance(event, h11.EndOfMessage):
                    return status, body


def site(tmp: Path, api_port: int) -> Nginx:
    """The shipped site and a main configuration around it, written into ``tmp``."""
    https_port, http_port = free_port(), free_port()
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", f"/CN={HOST}", "-keyout", str(tmp / "key.pem"),
         "-out", str(tmp / "cert.pem")],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    text = SITE.read_text()
    for old, new in (
        (f"/etc/letsencrypt/live/{HOST}/fullchain.pem", str(tmp / "cert.pem")),
        (f"/etc/letsencrypt/live/{HOST}/privkey.pem", str(tmp / "key.pem")),
        ("listen 443 ssl;", f"listen 127.0.0.1:{https_port} ssl;"),
        ("listen 80;", f"listen 127.0.0.1:{http_port};"),
        ("127.0.0.1:8000", f"127.0.0.1:{api_port}"),
    ):
        assert old in text, old
        text = text.replace(old, new)
    text = "\n".join(line for line in text.splitlines() if "[::]" not in line)
    (tmp / "site.conf").write_text(text)
    temp = {name: tmp / name for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi")}
    main = tmp / "nginx.conf"
    main.write_text(
        f"pid {tmp / 'nginx.pid'};\nerror_log {tmp / 'error.log'};\nevents {{}}\nhttp {{\n"
        f"  access_log off;\n  client_body_temp_path {temp['body']};\n"
        f"  proxy_temp_path {temp['proxy']};\n  fastcgi_temp_path {temp['fastcgi']};\n"
        f"  uwsgi_temp_path {temp['uwsgi']};\n  scgi_temp_path {temp['scgi']};\n"
        f"  include {tmp / 'site.conf'};\n}}\n"
    )
    return Nginx(tmp, https_port, http_port, main)


@contextmanager
def running_nginx(found: Nginx) -> Iterator[Nginx]:
    """nginx in the foreground with the site ``site`` wrote, stopped when the block ends."""
    proxy = subprocess.Popen(
        [nginx_binary(), "-p", str(found.tmp), "-c", str(found.main), "-g", "daemon off;"],
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(found.https_port, proxy)
        yield found
    finally:
        proxy.terminate()
        proxy.wait(timeout=15)
