"""A stop of the mail plane is orderly (issue 21 item 5): what Postfix asked is answered,
idle connections are closed cleanly between requests, and nothing new is accepted."""

from __future__ import annotations

import asyncio
import time

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.config import Settings
from maskmail.mail import custom_domains
from maskmail.mail.context import MailContext
from maskmail.mail.plane import CLOSE_TIMEOUT, mail_plane
from maskmail.mail.socketmap import netstring
from tests.mail.conftest import HOST
from tests.support import free_port

pytestmark = pytest.mark.anyio
SLOW = 1.0


async def _reply(reader: asyncio.StreamReader) -> bytes:
    return await asyncio.wait_for(reader.readuntil(b","), 10)


@pytest.mark.slow
async def test_a_stop_answers_lookups_under_way_and_closes_idle_connections(
    settings: Settings, relay_engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def slow_holder(ctx: MailContext, domain: str) -> None:
        await asyncio.sleep(SLOW)

    monkeypatch.setattr(custom_domains, "holder", slow_holder)
    port = free_port()
    plane = mail_plane(
        settings.model_copy(update={"policy_port": port}), relay_engine, host=HOST, port=free_port()
    )
    await plane.__aenter__()
    try:
        idle_reader, idle_writer = await asyncio.open_connection(HOST, port)
        idle_writer.write(netstring(b"domains idle.example"))
        assert await _reply(idle_reader) == b"9:NOTFOUND ,"
        busy_reader, busy_writer = await asyncio.open_connection(HOST, port)
        busy_writer.write(netstring(b"domains busy.example"))
        await busy_writer.drain()
        await asyncio.sleep(0.2)  # the lookup is under way
    finally:
        started = time.monotonic()
        stopping = asyncio.create_task(plane.__aexit__(None, None, None))
    # The idle connection is closed cleanly (an EOF, which Postfix retries once on a
    # new connection), the busy one is answered first and then closed.
    assert await asyncio.wait_for(idle_reader.read(), 10) == b""
    assert await _reply(busy_reader) == b"9:NOTFOUND ,"
    assert await asyncio.wait_for(busy_reader.read(), 10) == b""
    await stopping
    assert time.monotonic() - started < CLOSE_TIMEOUT
    with pytest.raises(OSError):
        await asyncio.open_connection(HOST, port)
    for writer in (idle_writer, busy_writer):
        writer.close()
