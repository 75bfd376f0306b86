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
from tests.mail.conftest import HOST, Masks, Sink, message
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


class _Client:
    """A raw SMTP client, to hold a session at an exact step while the plane stops."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int) -> _Client:
        client = cls(*await asyncio.open_connection(HOST, port))
        assert (await client.reply()).startswith(b"220")
        assert (await client.say(b"EHLO postfix.example")).startswith(b"250")
        return client

    async def reply(self) -> bytes:
        while True:
            line = await asyncio.wait_for(self.reader.readline(), 10)
            if line[3:4] != b"-":
                return line

    async def say(self, line: bytes) -> bytes:
        self.writer.write(line + b"\r\n")
        return await self.reply()

    async def begin(self, to: str) -> None:
        assert (await self.say(b"MAIL FROM:<alice@example.com>")).startswith(b"250")
        assert (await self.say(f"RCPT TO:<{to}>".encode())).startswith(b"250")
        assert (await self.say(b"DATA")).startswith(b"354")

    async def ended(self) -> bool:
        return await asyncio.wait_for(self.reader.read(), 10) == b""


async def test_a_stop_finishes_the_message_under_way_and_turns_a_reused_connection_away(
    settings: Settings, relay_engine: AsyncEngine, masks: Masks, sink: Sink
) -> None:
    """Postfix keeps busy connections open and reuses them, so they never end by
    themselves: the stop lets the message under way finish, then hangs up, and answers
    the RSET with which Postfix probes a cached connection before reusing it with 421,
    so that Postfix opens a new connection instead of losing one in the middle of DATA."""
    mask = await masks.make()
    port = free_port()
    plane = mail_plane(settings, relay_engine, host=HOST, port=port)
    await plane.__aenter__()
    try:
        cached = await _Client.open(port)
        await cached.begin(mask.address)
        assert (await cached.say(message(to=mask.address) + b".")).startswith(b"250")
        busy = await _Client.open(port)
        await busy.begin(mask.address)
        body = message(to=mask.address, subject="under way")
        busy.writer.write(body[:40])
    finally:
        started = time.monotonic()
        stopping = asyncio.create_task(plane.__aexit__(None, None, None))
    await asyncio.sleep(0.2)
    assert (await cached.say(b"RSET")).startswith(b"421 4.3.2")
    assert await cached.ended()
    assert (await busy.say(body[40:] + b".")).startswith(b"250")
    assert await busy.ended()
    await stopping
    assert time.monotonic() - started < CLOSE_TIMEOUT
    assert [m.data.count(b"Subject: under way") for m in sink.messages] == [0, 1]
    for client in (cached, busy):
        client.writer.close()
