"""The server itself: banner, extensions, connection limit, and errors that stay private."""

from __future__ import annotations

import asyncio
import smtplib
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.mail.context import MailContext
from maskmail.mail.handler import RelayHandler
from maskmail.mail.server import start_smtp
from maskmail.mail.spam import SpamJudge
from maskmail.store.engine import create_engine
from tests.mail.conftest import DOMAIN, HOST, Masks, message, send_async
from tests.support import free_port

pytestmark = pytest.mark.anyio


def greet(port: int) -> tuple[bytes, bytes]:
    with smtplib.SMTP(timeout=30) as client:
        _, banner = client.connect(HOST, port)
        client.ehlo("client.example.com")
        assert client.ehlo_resp is not None
        return banner, client.ehlo_resp


async def test_banner_and_extensions(relay: int) -> None:
    banner, ehlo = await asyncio.to_thread(greet, relay)
    assert banner == f"{DOMAIN} ESMTP".encode()
    assert b"Python" not in banner and b"aiosmtpd" not in banner.lower()
    lines = ehlo.split(b"\n")
    assert b"SMTPUTF8" in lines
    assert b"8BITMIME" in lines
    assert f"SIZE {25 * 1024 * 1024}".encode() in lines


async def test_utf8_envelope_and_headers_are_forwarded(relay: int, masks: Masks) -> None:
    mask = await masks.make()

    def send_utf8() -> None:
        with smtplib.SMTP(HOST, relay, timeout=30) as client:
            data = (
                f"From: Jürgen <jürgen@bücher.example>\r\nTo: {mask.address}\r\n"
                "Subject: Grüße\r\n\r\nGrüße\r\n"
            ).encode()
            client.sendmail("jürgen@bücher.example", [mask.address], data, ["SMTPUTF8"])

    await asyncio.to_thread(send_utf8)
    assert (await mask.counters())["num_forwarded"] == 1


class Exploding:
    async def deliver(self, message: bytes, *, sender: str, recipient: str) -> None:
        raise RuntimeError("secret internal detail")


@asynccontextmanager
async def bare_server(
    engine: AsyncEngine,
    *,
    max_connections: int = 2,
    max_per_client: int = 50,
    idle_timeout: float = 30,
) -> AsyncIterator[int]:
    """maskmail's server with an outbound that always crashes; yields its port."""
    context = MailContext(
        engine=engine,
        domain=DOMAIN,
        hostname=DOMAIN,
        outbound=Exploding(),
        judge=SpamJudge(()),
        bounce_secret=b"k",
    )
    port = free_port()
    server = await start_smtp(
        RelayHandler(context),
        host=HOST,
        port=port,
        hostname=DOMAIN,
        max_message_size=1 << 20,
        max_connections=max_connections,
        max_per_client=max_per_client,
        idle_timeout=idle_timeout,
    )
    try:
        yield port
    finally:
        server.close()


@pytest.fixture
async def limited(relay_engine: AsyncEngine) -> AsyncIterator[int]:
    """A server with room for two connections and an outbound that always crashes."""
    async with bare_server(relay_engine) as port:
        yield port


def banner_of(sock: socket.socket) -> bytes:
    return sock.recv(1024)


async def test_connection_limit_turns_away_the_extra_client(limited: int) -> None:
    def scenario() -> tuple[bytes, bytes, bytes]:
        first = socket.create_connection((HOST, limited))
        second = socket.create_connection((HOST, limited))
        try:
            banners = banner_of(first), banner_of(second)
            with socket.create_connection((HOST, limited)) as third:
                turned_away = banner_of(third)
        finally:
            first.close()
            second.close()
        return *banners, turned_away

    one, two, three = await asyncio.to_thread(scenario)
    assert one.startswith(b"220 ") and two.startswith(b"220 ")
    assert three.startswith(b"421 4.7.0")

    def after_closing() -> bytes:
        # Closed connections give their places back.
        for _ in range(50):
            with socket.create_connection((HOST, limited)) as sock:
                got = banner_of(sock)
            if got.startswith(b"220 "):
                return got
        return got

    assert (await asyncio.to_thread(after_closing)).startswith(b"220 ")


async def test_one_client_holding_its_share_shuts_nobody_else_out(
    relay_engine: AsyncEngine,
) -> None:
    def scenario(port: int) -> tuple[list[bytes], bytes, bytes, bytes]:
        held = [socket.create_connection((HOST, port)) for _ in range(3)]
        try:
            banners = [banner_of(sock) for sock in held]
            with socket.create_connection((HOST, port)) as extra:
                refused = banner_of(extra)
            with socket.create_connection((HOST, port), source_address=("127.0.0.2", 0)) as other:
                other_banner = banner_of(other)
        finally:
            for sock in held:
                sock.close()
        for _ in range(50):
            # Closed connections give the client its places back.
            with socket.create_connection((HOST, port)) as again:
                back = banner_of(again)
            if back.startswith(b"220 "):
                break
        return banners, refused, other_banner, back

    async with bare_server(relay_engine, max_connections=10, max_per_client=3) as port:
        banners, refused, other, back = await asyncio.to_thread(scenario, port)
    assert all(b.startswith(b"220 ") for b in banners)
    assert refused.startswith(b"421 4.7.0") and b"your address" in refused
    assert other.startswith(b"220 ")
    assert back.startswith(b"220 ")


async def test_unexpected_errors_answer_451_without_detail(limited: int, masks: Masks) -> None:
    mask = await masks.make()
    with pytest.raises(smtplib.SMTPDataError) as caught:
        await send_async(limited, "a@example.com", [mask.address], message(to=mask.address))
    assert caught.value.smtp_code == 451
    assert b"secret" not in caught.value.smtp_error
    assert (await mask.counters())["num_forwarded"] == 0


@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
async def test_idle_clients_are_disconnected(relay_engine: AsyncEngine) -> None:
    def idle(port: int) -> bytes:
        with socket.create_connection((HOST, port), timeout=20) as sock:
            data = b""
            while chunk := sock.recv(1024):
                data += chunk
            return data

    async with bare_server(relay_engine, idle_timeout=0.5) as port:
        said = await asyncio.to_thread(idle, port)
    assert said.startswith(b"220 ")
    assert b"\r\n421 4.4.2 " in said


async def test_database_outage_answers_451_at_rcpt() -> None:
    # Nothing listens on port 1: every connection attempt is refused at once.
    engine = create_engine("postgresql+asyncpg://maskmail@127.0.0.1:1/none", pool_size=1)
    rcpt = f"abcdefgh@{DOMAIN}"
    try:
        async with bare_server(engine) as port:
            with pytest.raises(smtplib.SMTPRecipientsRefused) as caught:
                await send_async(port, "a@example.com", [rcpt], b"Subject: x\r\n\r\n")
    finally:
        await engine.dispose()
    code, text = caught.value.recipients[rcpt]
    assert (code, text[:5]) == (451, b"4.3.0")


async def test_a_client_that_connects_and_hangs_up_gives_its_places_back_at_once(
    relay_engine: AsyncEngine,
) -> None:
    def scenario(port: int) -> bytes:
        for _ in range(6):
            # Hung up before reading the banner, and half-closed: no QUIT, no idle wait.
            sock = socket.create_connection((HOST, port))
            sock.shutdown(socket.SHUT_WR)
            sock.close()
        time.sleep(0.3)
        with socket.create_connection((HOST, port), timeout=5) as again:
            return banner_of(again)

    async with bare_server(relay_engine, max_per_client=3, idle_timeout=30) as port:
        back = await asyncio.to_thread(scenario, port)
    assert back.startswith(b"220 ")
