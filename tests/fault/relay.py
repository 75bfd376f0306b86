"""maskmail's SMTP server in a thread of its own, and what the SMTP fault tests check.

The corpus and the property test send with blocking clients from many threads; a server
on its own loop lets them, and a handler that blocks that loop shows up as a stalled
bystander instead of a stalled test.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import smtplib
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.config import Settings
from maskmail.mail.plane import mail_plane
from maskmail.store import accounts
from maskmail.store.addresses import create_address
from maskmail.store.engine import create_engine, transaction
from maskmail.store.tables import addresses
from tests.mail.conftest import DOMAIN, HOST, Sink
from tests.support import free_port

T = TypeVar("T")

# Answers a hostile message may get: accepted, or refused for a line over 1,000 bytes
# (RFC 5321 4.5.3.1.6). Nothing else may fail: the database and the sink are up.
ANSWERS = {250, 500}
_BARE_CR = re.compile(rb"\r(?!\n)")
_BARE_LF = re.compile(rb"(?<!\r)\n")


@dataclass(frozen=True)
class Outcome:
    """What the server said to one message, and whether the connection was still alive."""

    mail: int
    rcpt: int
    data: int
    text: bytes
    noop: int


@dataclass(frozen=True)
class Relayed:
    """A relay address and the mailbox its mail goes to."""

    id: int
    address: str
    owner: str


@dataclass
class ThreadedRelay:
    port: int
    engine: AsyncEngine
    loop: asyncio.AbstractEventLoop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the server's loop, from any thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=60)

    def new_address(self) -> Relayed:
        """A fresh owner with one enabled relay address."""

        async def make() -> Relayed:
            mailbox = f"o{secrets.token_hex(5)}@example.com"
            async with transaction(self.engine) as conn:
                owner = await accounts.add_user(conn, mailbox)
                made = await create_address(conn, owner, domain=DOMAIN, length=8)
            return Relayed(made.id, made.full_address, mailbox)

        return self.run(make())

    def forwarded(self, address_id: int) -> int:
        async def read() -> int:
            async with transaction(self.engine, readonly=True) as conn:
                query = select(addresses.c.num_forwarded).where(addresses.c.id == address_id)
                return int(await conn.scalar(query) or 0)

        return self.run(read())

    def submit(self, recipient: str, data: bytes, sender: str = "mallory@example.net") -> Outcome:
        """One message over one new connection, with every reply kept, then a NOOP."""
        with smtplib.SMTP(HOST, self.port, timeout=60) as client:
            client.ehlo("hostile.example.net")
            mail, _ = client.docmd("MAIL", f"FROM:<{sender}>")
            rcpt, _ = client.docmd("RCPT", f"TO:<{recipient}>")
            code, text = (0, b"")
            if rcpt == 250:
                # smtplib's data() stuffs dots and ends the data; the bytes go as they are.
                code, text = client.data(data)
            noop, _ = client.noop()
            return Outcome(mail, rcpt, code, text, noop)


@contextmanager
def threaded_relay(settings: Settings, database_url: str) -> Iterator[ThreadedRelay]:
    """The mail plane on a free port, in its own thread and loop, until the block ends."""
    port = free_port()
    ready: list[ThreadedRelay] = []
    started = threading.Event()
    failure: list[BaseException] = []

    async def serve(stop: asyncio.Event) -> None:
        engine = create_engine(database_url, pool_size=8)
        try:
            async with mail_plane(settings, engine, host=HOST, port=port):
                ready.append(ThreadedRelay(port, engine, asyncio.get_running_loop()))
                started.set()
                await stop.wait()
        finally:
            await engine.dispose()

    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    def main() -> None:
        try:
            loop.run_until_complete(serve(stop))
        except BaseException as exc:
            failure.append(exc)
        finally:
            started.set()
            loop.close()

    thread = threading.Thread(target=main, name="maskmail-smtp", daemon=True)
    thread.start()
    started.wait(60)
    if not ready:
        raise RuntimeError(f"the relay did not start: {failure}")
    try:
        yield ready[0]
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)


def forwarded_to(sink: Sink, mask: Relayed) -> list[bytes]:
    return [m.data for m in sink.messages if m.rcpt_tos == [mask.owner]]


def assert_clean_headers(forward: bytes) -> None:
    """A forward's header block carries nothing a downstream parser could split on."""
    block = forward.split(b"\r\n\r\n", 1)[0] + b"\r\n"
    assert b"\x00" not in block
    assert not _BARE_CR.search(block)
    assert not _BARE_LF.search(block)
    lines = block.split(b"\r\n")
    assert sum(line.lower().startswith(b"from:") for line in lines) == 1
    assert sum(line.lower().startswith(b"x-maskmail-loop:") for line in lines) == 1
    assert not any(line.lower().startswith(b"bcc") for line in lines)
