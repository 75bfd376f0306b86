"""deploy/: the systemd units pass `systemd-analyze verify`, and the nginx configuration
passes `nginx -t` and serves the API over HTTPS while keeping /metrics in."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import Deployment
from tests.nginx import nginx_binary, running_nginx, site
from tests.support import free_port, maskmail_cmd, running

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


def test_nginx_config_passes_and_serves_https(deployment: Deployment) -> None:
    tmp = deployment.tmp
    api_port = free_port()
    shipped = site(tmp, api_port)
    checked = subprocess.run(
        [nginx_binary(), "-t", "-p", str(tmp), "-c", str(shipped.main)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    assert "syntax is ok" in checked.stderr and "test is successful" in checked.stderr
    serve = ("serve", "--port", str(api_port))
    with (
        running(deployment.env, *serve, port=api_port, log=tmp / "serve.log"),
        running_nginx(shipped) as nginx,
        nginx.client() as client,
    ):
        ready = client.get("/readyz")
        metrics = client.get("/metrics")
        api = client.get("/v3/relay/addresses")
        redirect = httpx.get(
            f"http://127.0.0.1:{nginx.http_port}/v3/relay/addresses",
            headers={"Host": "relay.example.com"},
        )
    assert ready.status_code == 200 and ready.json() == {"status": "ready"}
    assert api.status_code == 401 and api.json()["code"] == "unauthorized"
    assert metrics.status_code == 404 and "maskmail_" not in metrics.text
    assert redirect.status_code == 301
    assert redirect.headers["location"] == "https://relay.example.com/v3/relay/addresses"
