"""A PostgreSQL that stops answering without closing: 503 and 451 within MASKMAIL_DB_TIMEOUT,
and service again once it answers, with no restart."""

from __future__ import annotations

import smtplib
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import Deployment, base_env
from tests.fault.blackhole import black_hole
from tests.sink import HOST
from tests.support import free_port, fresh_database, running, wait_for_port

pytestmark = pytest.mark.slow

DB_TIMEOUT = 1.0
# The deadline, with room for a loaded machine.
ANSWER_WITHIN = DB_TIMEOUT + 1.5


def _rcpt(port: int, address: str) -> tuple[int, float]:
    started = time.monotonic()
    with smtplib.SMTP(HOST, port, timeout=60) as client:
        client.ehlo("sender.example.net")
        client.mail("someone@example.net")
        code, _ = client.rcpt(address)
    return code, time.monotonic() - started


def _get(api: httpx.Client, path: str = "/v3/relay/addresses") -> tuple[int, float]:
    started = time.monotonic()
    status = api.get(path).status_code
    return status, time.monotonic() - started


def test_a_black_holed_database_is_503_and_451_then_recovers(tmp_path: Path) -> None:
    with fresh_database("postgres", tmp_path) as url:
        deployment = Deployment(env=base_env(url, tmp_path), tmp=tmp_path)
        deployment.cli("db", "upgrade")
        key = deployment.user_with_key("owner@example.com")
        with black_hole(("127.0.0.1", 5432)) as hole:
            proxied = url.replace("127.0.0.1:5432", f"127.0.0.1:{hole.port}")
            env = {**deployment.env, "MASKMAIL_DATABASE_URL": proxied}
            env["MASKMAIL_DB_TIMEOUT"] = str(DB_TIMEOUT)
            api_port, smtp_port = free_port(), free_port()
            args = ("up", "--api-port", str(api_port), "--smtp-port", str(smtp_port))
            with (
                running(env, *args, port=api_port, log=tmp_path / "up.log"),
                httpx.Client(
                    base_url=f"http://{HOST}:{api_port}",
                    headers={"Authorization": f"Bearer {key}"},
                    timeout=60,
                ) as api,
            ):
                wait_for_port(smtp_port)
                made = api.post("/v3/relay/addresses").json()
                address = made["full_address"]
                assert _rcpt(smtp_port, address)[0] == 250

                hole.swallow()
                status, took = _get(api)
                assert status == 503 and took < ANSWER_WITHIN, (status, took)
                code, took = _rcpt(smtp_port, address)
                assert code == 451 and took < ANSWER_WITHIN, (code, took)
                # New connections are swallowed too, not only the pooled ones; and
                # SQLAlchemy's path (one address by id) has the same deadline.
                status, took = _get(api)
                assert status == 503 and took < ANSWER_WITHIN, (status, took)
                status, took = _get(api, f"/v3/relay/addresses/{made['id']}")
                assert status == 503 and took < ANSWER_WITHIN, (status, took)

                hole.release()
                deadline = time.monotonic() + 30
                while _get(api)[0] != 200:
                    assert time.monotonic() < deadline, "the API never recovered"
                    time.sleep(0.5)
                assert _rcpt(smtp_port, address)[0] == 250
