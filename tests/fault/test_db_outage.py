"""Database outage: PostgreSQL stops under load and starts again; maskmail rides it out.

The cluster is a private one made for this test: the shared server must never be stopped.
"""

from __future__ import annotations

import asyncio
import smtplib
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import httpx
import pytest

from maskmail.store.migrate import upgrade
from tests.fault.mailload import NO_ANSWER, attempt, create_addresses, letter
from tests.fault.procs import PrivatePostgres, Up, private_postgres, up, wait_until
from tests.sink import HOST, Sink
from tests.support import make_keys

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

OWNER = "outage@example.com"
# Seconds the database stays away while the load runs on.
OUTAGE = 4.0
# Seconds maskmail gets to notice the database is back, on a loaded CI machine.
RECOVERY = 30.0


@dataclass
class Load:
    """API reads and creates, and SMTP sends, from one background thread until stopped."""

    server: Up
    key: str
    rcpts: list[str]
    api: Counter[tuple[int, str]] = field(default_factory=Counter)
    smtp: Counter[int] = field(default_factory=Counter)
    stop: threading.Event = field(default_factory=threading.Event)

    async def _api(self) -> None:
        headers = {"Authorization": f"Bearer {self.key}"}
        async with httpx.AsyncClient(
            base_url=self.server.api_url, headers=headers, timeout=30
        ) as api:
            while not self.stop.is_set():
                for response in (
                    await api.get("/v3/relay/addresses"),
                    await api.post("/v3/relay/addresses"),
                ):
                    code = "" if response.status_code == 200 else response.json()["code"]
                    self.api[response.status_code, code] += 1
                await asyncio.sleep(0.05)

    async def _smtp(self) -> None:
        while not self.stop.is_set():
            for rcpt in self.rcpts:
                self.smtp[await attempt(self.server.smtp_port, letter(rcpt))] += 1
            await asyncio.sleep(0.05)

    def run(self) -> None:
        async def both() -> None:
            await asyncio.gather(self._api(), self._api(), self._smtp(), self._smtp())

        asyncio.run(both())


def rcpt_reply(port: int, rcpt: str) -> int:
    with smtplib.SMTP(HOST, port, timeout=30) as client:
        client.ehlo("client.example.com")
        client.mail("alice@example.com")
        code, _ = client.rcpt(rcpt)
        return code


def api_call(
    server: Up, key: str, method: str, path: str, body: dict[str, bool] | None = None
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"}
    return httpx.request(method, server.api_url + path, headers=headers, json=body, timeout=30)


def assert_unavailable(response: httpx.Response) -> None:
    """The documented 503: the SPEC's JSON error body, and a hint when to come back."""
    assert response.status_code == 503, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json()["code"] == "unavailable"
    assert "Traceback" not in response.text
    assert int(response.headers["retry-after"]) > 0


async def _create_database(pg: PrivatePostgres) -> None:
    conn = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{pg.port}/postgres")
    try:
        await conn.execute("CREATE DATABASE maskmail")
    finally:
        await conn.close()


def _check_down(server: Up, key: str, address_id: int, rcpt: str) -> None:
    for method, path in (
        ("GET", "/v3/relay/addresses"),
        ("GET", f"/v3/relay/addresses/{address_id}"),
        ("POST", "/v3/relay/addresses"),
    ):
        assert_unavailable(api_call(server, key, method, path))
    path = f"/v3/relay/addresses/{address_id}"
    assert_unavailable(api_call(server, key, "PATCH", path, {"enabled": False}))
    assert rcpt_reply(server.smtp_port, rcpt) == 451


def _check_recovered(server: Up, key: str, rcpts: list[str]) -> None:
    """Every pooled connection works again, not just the first one handed out."""

    async def many() -> None:
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(base_url=server.api_url, headers=headers, timeout=30) as api:
            responses = await asyncio.gather(*(api.get("/v3/relay/addresses") for _ in range(40)))
        assert [r.status_code for r in responses] == [200] * 40
        codes = await asyncio.gather(
            *(attempt(server.smtp_port, letter(rcpt)) for rcpt in rcpts * 4)
        )
        assert codes == [250] * len(codes)

    asyncio.run(many())


def _check_idle_restart(
    pg: PrivatePostgres, server: Up, key: str, rcpt: str, stop_mode: str
) -> None:
    """A restart nobody noticed (no traffic meanwhile) leaves every pooled connection dead:
    the first caller on each plane may hear "try again", and the pool is renewed for the
    next (SQLAlchemy drops every connection older than the failure)."""
    pg.stop(stop_mode)
    pg.start()
    first, second = (api_call(server, key, "GET", "/v3/relay/addresses") for _ in range(2))
    assert first.status_code == 200 or first.json()["code"] == "unavailable", first.text
    assert second.status_code == 200, second.text
    replies = [rcpt_reply(server.smtp_port, rcpt) for _ in range(2)]
    assert replies[0] in (250, 451)
    assert replies[1] == 250


# "fast" ends sessions with an admin-shutdown error; "immediate" is a crash: connections
# reset, and crash recovery on start ("the database system is starting up").
@pytest.mark.parametrize("stop_mode", ["fast", "immediate"])
def test_postgres_outage_gives_503_and_451_then_recovers_alone(
    tmp_path: Path, sink: Sink, stop_mode: str
) -> None:
    with private_postgres() as pg:
        asyncio.run(_create_database(pg))
        url = pg.url("maskmail")
        upgrade(url)
        [key] = asyncio.run(make_keys(url, OWNER))
        env = {
            "MASKMAIL_DATABASE_URL": url,
            "MASKMAIL_DATA_DIR": str(tmp_path / "var"),
            "MASKMAIL_DOMAIN": "relay.test",
            "MASKMAIL_RATE_LIMIT": "100000/minute",
            "MASKMAIL_SMARTHOST": f"{HOST}:{sink.port}",
            "MASKMAIL_OUTBOUND_TIMEOUT": "10",
        }
        log = tmp_path / "up.log"
        with up(env, log) as server:
            addresses = asyncio.run(create_addresses(server.api_url, key, 3))
            rcpts = list(addresses.values())
            load = Load(server, key, rcpts)
            thread = threading.Thread(target=load.run)
            thread.start()
            try:
                wait_until(lambda: load.smtp[250] > 5, RECOVERY, "mail before the outage")
                pg.stop(stop_mode)
                _check_down(server, key, next(iter(addresses)), rcpts[0])
                down_api, down_smtp = sum(load.api.values()), sum(load.smtp.values())
                wait_until(
                    lambda: load.smtp[451] > 5 and load.api[503, "unavailable"] > 5,
                    RECOVERY,
                    "the load to meet the outage",
                )
                asyncio.run(asyncio.sleep(OUTAGE))
                assert sum(load.api.values()) > down_api, "the API stalled during the outage"
                assert sum(load.smtp.values()) > down_smtp, "SMTP stalled during the outage"
                pg.start()
                wait_until(
                    lambda: api_call(server, key, "GET", "/v3/relay/addresses").status_code == 200,
                    RECOVERY,
                    "the API to recover",
                )
                _check_recovered(server, key, rcpts)
            finally:
                load.stop.set()
                thread.join(timeout=60)
            _check_idle_restart(pg, server, key, rcpts[0], stop_mode)
            assert server.proc is not None and server.proc.poll() is None
    # Nothing but successes and the two documented answers to an outage.
    assert set(load.api) <= {(200, ""), (503, "unavailable")}, load.api
    assert set(load.smtp) <= {250, 451}, load.smtp
    assert NO_ANSWER not in load.smtp
    text = log.read_text()
    assert "Traceback" not in text
    assert "unexpected error" not in text
