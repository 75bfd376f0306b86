"""The open-relay audit script, run against the real `maskmail up`: every trick refused."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import Deployment
from tests.sink import HOST, Sink
from tests.support import free_port, running, wait_for_port

pytestmark = pytest.mark.slow

AUDIT = Path(__file__).parents[2] / "scripts" / "open_relay_audit.py"
DOMAIN = "relay.test"


def audit(port: int, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(AUDIT), "--host", HOST, "--port", str(port), *extra],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_maskmail_refuses_every_relay_trick(deployment: Deployment) -> None:
    key = deployment.user_with_key("owner@example.com")
    api_port, smtp_port = free_port(), free_port()
    args = ("up", "--api-port", str(api_port), "--smtp-port", str(smtp_port))
    with running(deployment.env, *args, port=api_port, log=deployment.tmp / "up.log"):
        wait_for_port(smtp_port)
        created = httpx.post(
            f"http://{HOST}:{api_port}/v3/relay/addresses",
            headers={"Authorization": f"Bearer {key}"},
        )
        known = created.json()["full_address"]
        result = audit(smtp_port, "--domain", DOMAIN, "--known", known)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "31 tests, 0 accepted" in result.stdout
    for trick in ("percent hack", "bang path", "quoted local part", "source route", "IP literal"):
        assert trick in result.stdout
    assert "ACCEPTED" not in result.stdout
    # Refused at RCPT, every one: no probe got as far as DATA.
    rows = result.stdout.splitlines()[1:32]
    assert all(row.endswith(" -") for row in rows), rows


def test_the_audit_catches_an_open_relay(sink: Sink) -> None:
    # The sink takes mail for anyone: the audit must say so and fail.
    result = audit(sink.port, "--domain", DOMAIN)
    assert result.returncode == 1
    found = re.search(r"^26 tests, (\d+) accepted$", result.stdout, re.MULTILINE)
    assert found is not None, result.stdout
    # All but what aiosmtpd's own parser rejects as malformed.
    assert int(found[1]) == result.stdout.count("ACCEPTED") >= 20


def test_the_audit_fails_when_nothing_listens() -> None:
    result = audit(free_port(), "--domain", DOMAIN)
    assert result.returncode == 2
    assert "cannot audit" in result.stderr
