"""deploy/: the systemd units pass `systemd-analyze verify`, and the nginx configuration
passes `nginx -t` and serves the API over HTTPS while keeping /metrics in."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import Deployment
from tests.support import free_port, maskmail_cmd, running, wait_for_port

pytestmark = pytest.mark.slow
DEPLOY = Path(__file__).parents[2] / "deploy"
INSTALLED = "/opt/maskmail/bin/maskmail"


def test_systemd_units_verify(tmp_path: Path) -> None:
    units = sorted((DEPLOY / "systemd").iterdir())
    assert {u.name for u in units} >= {"maskmail-api.service", "maskmail-smtp.service"}
    for unit in units:
        text = unit.read_text()
        if unit.suffix == ".service":
            for hardening in ("DynamicUser=yes", "ProtectSystem=strict", "StateDirectory=maskmail"):
                assert hardening in text, (unit.name, hardening)
        # The units name the installed command; here it is this checkout's.
        (tmp_path / unit.name).write_text(text.replace(INSTALLED, maskmail_cmd()[0]))
    result = subprocess.run(
        ["systemd-analyze", "verify", *(str(tmp_path / u.name) for u in units)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # Unknown keys and bad values are only warnings: any output at all is a failure.
    assert result.returncode == 0 and not result.stdout + result.stderr, result.stderr


def _nginx_site(tmp: Path, https_port: int, http_port: int, api_port: int) -> Path:
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=relay.example.com", "-keyout", str(tmp / "key.pem"),
         "-out", str(tmp / "cert.pem")],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    site = (DEPLOY / "nginx" / "maskmail.conf").read_text()
    for old, new in (
        ("/etc/letsencrypt/live/relay.example.com/fullchain.pem", str(tmp / "cert.pem")),
        ("/etc/letsencrypt/live/relay.example.com/privkey.pem", str(tmp / "key.pem")),
        ("listen 443 ssl;", f"listen 127.0.0.1:{https_port} ssl;"),
        ("listen 80;", f"listen 127.0.0.1:{http_port};"),
        ("127.0.0.1:8000", f"127.0.0.1:{api_port}"),
    ):
        assert old in site, old
        site = site.replace(old, new)
    site = "\n".join(line for line in site.splitlines() if "[::]" not in line)
    (tmp / "site.conf").write_text(site)
    temp = {name: tmp / name for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi")}
    main = tmp / "nginx.conf"
    main.write_text(
        f"pid {tmp / 'nginx.pid'};\nerror_log {tmp / 'error.log'};\nevents {{}}\nhttp {{\n"
        f"  access_log off;\n  client_body_temp_path {temp['body']};\n"
        f"  proxy_temp_path {temp['proxy']};\n  fastcgi_temp_path {temp['fastcgi']};\n"
        f"  uwsgi_temp_path {temp['uwsgi']};\n  scgi_temp_path {temp['scgi']};\n"
        f"  include {tmp / 'site.conf'};\n}}\n"
    )
    return main


def test_nginx_config_passes_and_serves_https(deployment: Deployment) -> None:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    tmp = deployment.tmp
    https_port, http_port, api_port = free_port(), free_port(), free_port()
    main = _nginx_site(tmp, https_port, http_port, api_port)
    checked = subprocess.run(
        [nginx, "-t", "-p", str(tmp), "-c", str(main)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    assert "syntax is ok" in checked.stderr and "test is successful" in checked.stderr
    serve = ("serve", "--port", str(api_port))
    with running(deployment.env, *serve, port=api_port, log=tmp / "serve.log"):
        proxy = subprocess.Popen(
            [nginx, "-p", str(tmp), "-c", str(main), "-g", "daemon off;"],
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_port(https_port, proxy)
            base = f"https://127.0.0.1:{https_port}"
            trust = ssl.create_default_context(cafile=tmp / "cert.pem")
            trust.check_hostname = False  # the certificate names relay.example.com
            with httpx.Client(base_url=base, verify=trust) as client:
                client.headers["Host"] = "relay.example.com"
                ready = client.get("/readyz")
                metrics = client.get("/metrics")
                api = client.get("/v3/relay/addresses")
            redirect = httpx.get(
                f"http://127.0.0.1:{http_port}/v3/relay/addresses",
                headers={"Host": "relay.example.com"},
            )
        finally:
            proxy.terminate()
            proxy.wait(timeout=15)
    assert ready.status_code == 200 and ready.json() == {"status": "ready"}
    assert api.status_code == 401 and api.json()["code"] == "unauthorized"
    assert metrics.status_code == 404 and "maskmail_" not in metrics.text
    assert redirect.status_code == 301
    assert redirect.headers["location"] == "https://relay.example.com/v3/relay/addresses"
