"""Crash safety: `maskmail up` killed with SIGKILL under load loses nothing it acknowledged."""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter
from collections.abc import Callable, Coroutine
from contextlib import closing
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.e2e.conftest import Deployment
from tests.fault.mailload import (
    NO_ANSWER,
    Letter,
    attempt,
    forwarded_counts,
    letter,
    retry_until_accepted,
    tags_in,
)
from tests.fault.procs import Up, up
from tests.sink import HOST, Sink
from tests.support import make_keys

pytestmark = pytest.mark.slow

WORKERS = 16
# Acknowledged requests before the kill: enough that it lands in the middle of the load.
KILL_AFTER = 60
OWNER = "crash@example.com"
# Seconds the senders keep retrying held letters once the server is back.
RETRY_BUDGET = 120.0


def crash_env(deployment: Deployment, sink: Sink) -> dict[str, str]:
    return {
        **deployment.env,
        "MASKMAIL_SMARTHOST": f"{HOST}:{sink.port}",
        "MASKMAIL_OUTBOUND_TIMEOUT": "10",
    }


async def kill_during(
    server: Up,
    work: Callable[[asyncio.Event], Coroutine[Any, Any, None]],
    acknowledged: Callable[[], int],
) -> None:
    """Run ``work`` in WORKERS tasks and SIGKILL the server once enough was acknowledged;
    the tasks stop when they see ``stop`` (their requests in flight fail with the server)."""
    stop = asyncio.Event()
    tasks = [asyncio.create_task(work(stop)) for _ in range(WORKERS)]
    try:
        while acknowledged() < KILL_AFTER:
            assert not all(task.done() for task in tasks), "the load ended before the kill"
            await asyncio.sleep(0.01)
        await asyncio.to_thread(server.kill)
    finally:
        stop.set()
        await asyncio.gather(*tasks)


def assert_sqlite_intact(deployment: Deployment) -> None:
    url = make_url(deployment.env["MASKMAIL_DATABASE_URL"])
    if url.get_backend_name() != "sqlite":
        return
    assert url.database is not None
    with closing(sqlite3.connect(url.database)) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


async def _create_load(server: Up, key: str) -> tuple[dict[int, str], int]:
    """Creates until the kill; returns the acknowledged ones (id to address) and how many
    requests were sent."""
    made: dict[int, str] = {}
    sent = 0
    headers = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=WORKERS)
    async with httpx.AsyncClient(
        base_url=server.api_url, headers=headers, limits=limits, timeout=30
    ) as api:

        async def creates(stop: asyncio.Event) -> None:
            nonlocal sent
            while not stop.is_set():
                sent += 1
                try:
                    response = await api.post("/v3/relay/addresses")
                except httpx.TransportError:
                    continue  # no answer: the client does not know, and does not count it
                if response.status_code == 200:
                    body = response.json()
                    made[int(body["id"])] = str(body["full_address"])

        await kill_during(server, creates, lambda: len(made))
    return made, sent


async def _check_addresses(server: Up, key: str, made: dict[int, str], sent: int) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=server.api_url, headers=headers, timeout=30) as api:
        for address_id, full_address in made.items():
            response = await api.get(f"/v3/relay/addresses/{address_id}")
            assert response.status_code == 200, (address_id, response.text)
            assert response.json()["full_address"] == full_address
        listed = (await api.get("/v3/relay/addresses")).json()
        # Creates in flight at the kill may or may not have been committed; nothing else.
        assert set(made) <= {int(item["id"]) for item in listed}
        assert len(listed) <= sent
        assert (await api.post("/v3/relay/addresses")).status_code == 200


async def _mail_load(server: Up, rcpts: list[str]) -> list[Letter]:
    """Letters sent until the kill, each to one of ``rcpts`` in turn; returns all of them."""
    letters: list[Letter] = []

    async def sends(stop: asyncio.Event) -> None:
        while not stop.is_set():
            item = letter(rcpts[len(letters) % len(rcpts)])
            letters.append(item)
            code = await attempt(server.smtp_port, item)
            assert code in (250, NO_ANSWER) or 400 <= code < 500, code

    await kill_during(server, sends, lambda: sum(item.accepted for item in letters))
    return letters


def test_sigkill_under_load_loses_nothing_acknowledged(deployment: Deployment, sink: Sink) -> None:
    """One server killed twice: during a create load, then during a mail load."""
    [key] = asyncio.run(make_keys(deployment.env["MASKMAIL_DATABASE_URL"], OWNER))
    with up(crash_env(deployment, sink), deployment.tmp / "up.log") as server:
        made, sent = asyncio.run(_create_load(server, key))
        assert len(made) >= KILL_AFTER
        assert_sqlite_intact(deployment)  # as the kill left it, before any recovery
        server.start()
        asyncio.run(_check_addresses(server, key, made, sent))

        addresses = dict(list(made.items())[:8])
        letters = asyncio.run(_mail_load(server, list(addresses.values())))
        assert sum(item.accepted for item in letters) >= KILL_AFTER
        assert_sqlite_intact(deployment)
        # Whatever got its 250 before the kill had reached the smarthost already.
        arrived = tags_in(sink.messages)
        assert all(arrived[item.tag] >= 1 for item in letters if item.accepted)

        server.start()
        counted = asyncio.run(forwarded_counts(server.api_url, key, addresses))
        assert_counts_honest(addresses, letters, arrived, counted)
        # The senders retry what got no 250; each letter then arrives at least once.
        asyncio.run(_retry(server.smtp_port, [item for item in letters if not item.accepted]))
        arrived = tags_in(sink.messages)
        assert all(arrived[item.tag] >= 1 for item in letters)
        counted = asyncio.run(forwarded_counts(server.api_url, key, addresses))
        assert_counts_honest(addresses, letters, arrived, counted)
    assert_sqlite_intact(deployment)


def assert_counts_honest(
    addresses: dict[int, str], letters: list[Letter], arrived: Counter[str], counted: dict[int, int]
) -> None:
    """Counted after delivery and before the 250: never more than the smarthost took, never
    fewer than the senders were told (a kill in between costs a duplicate, not a count)."""
    by_address = {full: address_id for address_id, full in addresses.items()}
    delivered = dict.fromkeys(addresses, 0)
    answered = dict.fromkeys(addresses, 0)
    for item in letters:
        delivered[by_address[item.rcpt]] += arrived[item.tag]
        answered[by_address[item.rcpt]] += item.accepted
    for address_id in addresses:
        assert answered[address_id] <= counted[address_id] <= delivered[address_id]


async def _retry(port: int, held: list[Letter]) -> None:
    deadline = asyncio.get_running_loop().time() + RETRY_BUDGET
    await retry_until_accepted(port, held, deadline)
