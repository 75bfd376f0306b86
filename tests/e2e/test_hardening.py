"""The real ``maskmail up`` under hostile clients: nobody stalls the others."""

from __future__ import annotations

import smtplib
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import Deployment, base_env
from tests.sink import HOST
from tests.support import free_port, fresh_database, running, wait_for_port

pytestmark = pytest.mark.slow


@dataclass
class Up:
    api: httpx.Client
    smtp_port: int
    log: Path


@contextmanager
def maskmail_up(tmp: Path, **settings: str) -> Iterator[Up]:
    """``maskmail up`` on SQLite with a user and key; ``settings`` are MASKMAIL_* values."""
    with fresh_database("sqlite", tmp) as url:
        env = {
            **base_env(url, tmp),
            **{f"MASKMAIL_{name.upper()}": value for name, value in settings.items()},
        }
        deployment = Deployment(env=env, tmp=tmp)
        deployment.cli("db", "upgrade")
        key = deployment.user_with_key("owner@example.com")
        api_port, smtp_port = free_port(), free_port()
        args = ("up", "--api-port", str(api_port), "--smtp-port", str(smtp_port))
        log = tmp / "up.log"
        with running(env, *args, port=api_port, log=log):
            wait_for_port(smtp_port)
            with httpx.Client(
                base_url=f"http://{HOST}:{api_port}",
                headers={"Authorization": f"Bearer {key}"},
                timeout=30,
            ) as api:
                yield Up(api=api, smtp_port=smtp_port, log=log)


HUGE = 100 * 1024 * 1024


def _send_huge_header(port: int, sent: list[int], answer: list[bytes]) -> None:
    """Send a request whose Authorization header is 100 MB, until the server hangs up."""
    chunk = b"a" * 65536
    with socket.create_connection((HOST, port), timeout=30) as sock:
        sock.sendall(b"GET /v3/relay/addresses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ")
        total = 0
        try:
            while total < HUGE:
                sock.sendall(chunk)
                total += len(chunk)
        except OSError:
            pass
        sent.append(total)
        try:
            answer.append(sock.recv(200))
        except OSError:
            answer.append(b"")


def _status_line(up: Up, header: bytes) -> bytes:
    port = int(str(up.api.base_url).rsplit(":", 1)[1].strip("/"))
    with socket.create_connection((HOST, port), timeout=30) as sock:
        sock.sendall(b"GET /v3/relay/addresses HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n\r\n")
        return sock.recv(200)


def _timed_get(api: httpx.Client) -> float:
    start = time.monotonic()
    assert api.get("/v3/relay/addresses").status_code == 200
    return time.monotonic() - start


def test_a_huge_header_is_cut_off_and_stalls_nobody(tmp_path: Path) -> None:
    with maskmail_up(tmp_path) as up:
        usual = min(_timed_get(up.api) for _ in range(5))
        # A head that arrives whole in one read is measured too; one under the cap passes.
        assert _status_line(up, b"X-Big: " + b"a" * 100_000).startswith(b"HTTP/1.1 431")
        assert _status_line(up, b"X-Fine: " + b"a" * 20_000).startswith(b"HTTP/1.1 401")
        sent: list[int] = []
        answer: list[bytes] = []
        port = int(str(up.api.base_url).rsplit(":", 1)[1].strip("/"))
        attacker = threading.Thread(target=_send_huge_header, args=(port, sent, answer))
        attacker.start()
        during: list[float] = []
        while attacker.is_alive() and len(during) < 50:
            during.append(_timed_get(up.api))
        attacker.join(timeout=60)
        assert not attacker.is_alive()
    # The server hung up long before 100 MB arrived, with a 431 when the client read it.
    assert sent and sent[0] < HUGE
    assert answer[0] in (b"",) or answer[0].startswith(b"HTTP/1.1 431")
    assert max(during, default=0.0) < max(1.0, 20 * usual)


def _banner_then_silence(port: int) -> bytes:
    """Read the banner, say nothing, and return what the server writes before hanging up."""
    with socket.create_connection((HOST, port), timeout=30) as sock:
        got = b""
        while True:
            chunk = sock.recv(1024)
            if not chunk:
                return got
            got += chunk


def test_an_idle_client_is_told_why_under_the_real_event_loop(tmp_path: Path) -> None:
    with maskmail_up(tmp_path, smtp_timeout="1") as up:
        started = time.monotonic()
        said = _banner_then_silence(up.smtp_port)
        waited = time.monotonic() - started
    lines = said.decode().splitlines()
    assert lines[0].startswith("220 ")
    assert lines[-1].startswith("421 4.4.2"), said
    assert waited < 20


def _from(source: str, port: int) -> socket.socket:
    return socket.create_connection((HOST, port), timeout=10, source_address=(source, 0))


def test_one_smtp_client_cannot_take_every_connection(tmp_path: Path) -> None:
    with maskmail_up(tmp_path, smtp_max_per_client="2", smtp_max_connections="10") as up:
        # From an address of its own, so no earlier probe of the port counts against it.
        held = [_from("127.0.0.3", up.smtp_port) for _ in range(2)]
        try:
            assert all(sock.recv(1024).startswith(b"220 ") for sock in held)
            with _from("127.0.0.3", up.smtp_port) as extra:
                assert extra.recv(1024).startswith(b"421 4.7.0")
            with _from("127.0.0.2", up.smtp_port) as other:
                assert other.recv(1024).startswith(b"220 ")
        finally:
            for sock in held:
                sock.close()


def test_changing_the_domain_keeps_the_old_one_receiving(tmp_path: Path) -> None:
    with fresh_database("sqlite", tmp_path) as url:
        env = {**base_env(url, tmp_path), "MASKMAIL_DOMAIN": "old.test"}
        deployment = Deployment(env=env, tmp=tmp_path)
        deployment.cli("db", "upgrade")
        key = deployment.user_with_key("owner@example.com")
        addresses: list[str] = []
        for domain in ("old.test", "new.test"):
            env["MASKMAIL_DOMAIN"] = domain
            api_port, smtp_port = free_port(), free_port()
            args = ("up", "--api-port", str(api_port), "--smtp-port", str(smtp_port))
            log = tmp_path / f"up-{domain}.log"
            with (
                running(env, *args, port=api_port, log=log),
                httpx.Client(
                    base_url=f"http://{HOST}:{api_port}",
                    headers={"Authorization": f"Bearer {key}"},
                ) as api,
            ):
                wait_for_port(smtp_port)
                addresses.append(api.post("/v3/relay/addresses").json()["full_address"])
                codes = [_rcpt_code(smtp_port, a) for a in [*addresses, "x@elsewhere.test"]]
        assert addresses[0].endswith("@old.test") and addresses[1].endswith("@new.test")
        # Both addresses receive under the new domain; a foreign domain is still refused.
        assert codes[:2] == [250, 250] and codes[2] >= 500
        assert "still for @old.test" in log.read_text()


def _rcpt_code(port: int, address: str) -> int:
    with smtplib.SMTP(HOST, port, timeout=30) as client:
        client.ehlo("sender.example.net")
        client.mail("someone@example.net")
        return int(client.rcpt(address)[0])
