"""The probes as a load balancer sees them: `maskmail up`, and `maskmail smtp --health-port`."""

from __future__ import annotations

import signal

import httpx
import pytest

from tests.e2e.conftest import Deployment
from tests.sink import HOST
from tests.support import free_port, running, wait_for_port

pytestmark = pytest.mark.slow


def test_up_is_ready_with_database_schema_and_smtp(deployment: Deployment) -> None:
    api_port, smtp_port = free_port(), free_port()
    up = ("up", "--api-port", str(api_port), "--smtp-port", str(smtp_port))
    with running(deployment.env, *up, port=api_port, log=deployment.tmp / "up.log"):
        wait_for_port(smtp_port)
        assert httpx.get(f"http://{HOST}:{api_port}/healthz").json() == {"status": "ok"}
        ready = httpx.get(f"http://{HOST}:{api_port}/readyz")
    assert ready.status_code == 200, ready.text


def test_smtp_serves_its_probes_on_the_health_port(deployment: Deployment) -> None:
    smtp_port, health_port = free_port(), free_port()
    args = ("smtp", "--port", str(smtp_port), "--health-port", str(health_port))
    with running(deployment.env, *args, port=health_port, log=deployment.tmp / "smtp.log") as proc:
        wait_for_port(smtp_port)
        assert httpx.get(f"http://{HOST}:{health_port}/healthz").status_code == 200
        ready = httpx.get(f"http://{HOST}:{health_port}/readyz")
        assert ready.status_code == 200, ready.text
        # Only the probes: the API is not served there.
        assert httpx.get(f"http://{HOST}:{health_port}/v3/relay/addresses").status_code == 404
    # As under `up`, uvicorn owns SIGTERM: it shuts down, then re-raises the signal.
    assert proc.returncode in {0, -signal.SIGTERM}
    assert "Application shutdown complete" in (deployment.tmp / "smtp.log").read_text()
