"""Pooled connections to the smarthost: reused when clean, replaced when dropped or failed."""

from __future__ import annotations

from typing import Any

import aiosmtplib
import pytest

from maskmail.mail.smtp_pool import SmtpPool
from tests.mail.conftest import HOST, Sink

pytestmark = pytest.mark.anyio


def count_sessions(sink: Sink) -> list[str]:
    """Make the sink note every EHLO, that is every new connection to it."""
    seen: list[str] = []

    async def handle_ehlo(
        server: Any, session: Any, envelope: Any, hostname: str, responses: list[str]
    ) -> list[str]:
        seen.append(hostname)
        session.host_name = hostname
        return responses

    sink.handler.handle_EHLO = handle_ehlo  # type: ignore[attr-defined]
    return seen


def pool_for(sink: Sink) -> SmtpPool:
    return SmtpPool(HOST, sink.port, timeout=10, local_hostname="relay.test")


async def send(pool: SmtpPool, n: int) -> None:
    data = f"Subject: {n}\r\nMessage-ID: <{n}@pool.test>\r\n\r\nbody {n}\r\n".encode()
    await pool.sendmail(data, sender="b@relay.test", recipient="o@owners.test", mail_options=[])


async def test_sequential_forwards_share_one_connection(sink: Sink) -> None:
    sessions = count_sessions(sink)
    pool = pool_for(sink)
    try:
        for n in range(3):
            await send(pool, n)
    finally:
        await pool.close()
    assert [m.data.split(b"\r\n")[1] for m in sink.messages] == [
        f"Message-ID: <{n}@pool.test>".encode() for n in range(3)
    ]
    assert sessions == ["relay.test"]


async def test_a_connection_the_server_dropped_is_replaced_and_nothing_doubles(
    sink: Sink,
) -> None:
    pool = pool_for(sink)
    try:
        await send(pool, 1)
        sink.stop()
        sink.start()
        sessions = count_sessions(sink)
        await send(pool, 2)
    finally:
        await pool.close()
    assert len(sink.messages) == 2
    assert sessions == ["relay.test"]


async def test_a_connection_is_not_reused_after_an_error(sink: Sink) -> None:
    sessions = count_sessions(sink)
    pool = pool_for(sink)
    try:
        sink.handler.reply = "451 4.3.0 try later"
        with pytest.raises(aiosmtplib.SMTPResponseException):
            await send(pool, 1)
        sink.handler.reply = None
        await send(pool, 2)
    finally:
        await pool.close()
    assert len(sink.messages) == 1
    assert sessions == ["relay.test", "relay.test"]
