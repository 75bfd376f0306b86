"""Forwarding: the answer, what reaches the smarthost, and the counters read through the API."""

from __future__ import annotations

import hashlib
import time
from email import message_from_bytes, policy
from email.utils import getaddresses
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.config import Settings, load_bounce_secret
from maskmail.core.bounce_addresses import BounceOf, bounced
from maskmail.mail.plane import mail_plane
from maskmail.mail.rewrite import split_message
from maskmail.store.engine import create_engine, transaction
from maskmail.store.mailflow import find_reply_route
from tests.mail.conftest import (
    DOMAIN,
    HOST,
    Masks,
    Sink,
    counts,
    mail_settings,
    message,
    send_async,
)
from tests.support import free_port

pytestmark = pytest.mark.anyio
NESTED = Path(__file__).with_name("fixtures") / "nested.eml"


async def test_forward_rewrites_and_counts(
    relay: int, sink: Sink, masks: Masks, settings: Settings, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    refused = await send_async(
        relay,
        "alice@example.com",
        [mask.address],
        message(to=mask.address, extra="X-Mailer: x\r\n"),
    )
    assert refused == {}
    [got] = sink.messages
    assert got.rcpt_tos == [mask.owner]
    bounce_local, _, bounce_domain = got.mail_from.rpartition("@")
    assert bounce_domain == DOMAIN
    now = int(time.time())
    assert bounced(bounce_local, now, load_bounce_secret(settings)) == BounceOf(
        mask.address_id, None
    )

    forwarded = message_from_bytes(got.data, policy=policy.default)
    [(display, from_address)] = getaddresses([str(forwarded["From"])])
    assert from_address == mask.address
    assert "Alice Example" in display and "alice@example.com" in display
    reply_local, _, reply_domain = str(forwarded["Reply-To"]).rpartition("@")
    assert reply_domain == DOMAIN
    async with transaction(relay_engine, readonly=True) as conn:
        route = await find_reply_route(conn, reply_local, reply_domain)
    assert route is not None
    assert (route.address.id, route.outside) == (mask.address_id, "alice@example.com")
    assert forwarded["Subject"] == "hello"
    assert forwarded["X-Mailer"] is None
    [received] = forwarded.get_all("Received") or []
    assert f"for <{mask.address}>" in str(received)
    assert mask.owner not in got.data.decode()
    assert await mask.counters() == counts(forwarded=1)


async def test_reverse_alias_is_stable_per_sender(relay: int, sink: Sink, masks: Masks) -> None:
    mask = await masks.make()
    for sender in ("alice@example.com", "Alice@Example.com", "carol@example.net"):
        await send_async(relay, sender, [mask.address], message(to=mask.address, sender=sender))
    reply_tos = [
        str(message_from_bytes(m.data, policy=policy.default)["Reply-To"]) for m in sink.messages
    ]
    assert reply_tos[0] == reply_tos[1] != reply_tos[2]
    assert (await mask.counters())["num_forwarded"] == 3


async def test_replies_go_where_the_sender_asked(relay: int, sink: Sink, masks: Masks) -> None:
    mask = await masks.make()
    other = await masks.make()
    data = message(to=mask.address, extra="Reply-To: list@lists.example.com\r\n")
    await send_async(relay, "alice@example.com", [mask.address], data)
    await send_async(relay, "alice@example.com", [other.address], message(to=other.address))
    first, second = (message_from_bytes(m.data, policy=policy.default) for m in sink.messages)
    # Another relay address, same outside sender: a different reverse alias.
    assert str(first["Reply-To"]) != str(second["Reply-To"])


async def test_body_bytes_arrive_unchanged(relay: int, sink: Sink, masks: Masks) -> None:
    mask = await masks.make()
    original = NESTED.read_bytes()
    await send_async(relay, "bob@example.org", [mask.address], original)
    [got] = sink.messages
    _, sent_body = split_message(original)
    headers, arrived_body = split_message(got.data)
    assert hashlib.sha256(arrived_body).hexdigest() == hashlib.sha256(sent_body).hexdigest()
    assert b"X-Mailer" not in headers and b"DKIM-Signature" not in headers
    assert b"10.1.2.3" not in headers
    assert b'boundary="outer"' in headers
    parsed = message_from_bytes(got.data, policy=policy.default)
    assert parsed.get_content_type() == "multipart/mixed"
    assert "Bob Sender" in str(parsed["From"])


async def test_without_smarthost_mail_goes_to_the_outbox(
    database_url: str, tmp_path: Path, relay_engine: AsyncEngine, masks: Masks
) -> None:
    settings = mail_settings(database_url, tmp_path / "no-smarthost")
    port = free_port()
    mask = await masks.make()
    async with mail_plane(settings, relay_engine, host=HOST, port=port):
        await send_async(port, "alice@example.com", [mask.address], message(to=mask.address))
    [path] = list((settings.outbox_dir / "new").iterdir())
    stored = path.read_bytes()
    assert stored.startswith(b"Return-Path: <bounce+")
    assert f"Delivered-To: {mask.owner}".encode() in stored
    assert b"\r\nHello there.\r\n" in stored


@pytest.mark.parametrize("pool_size", [8, 2])
async def test_one_driver_connection_is_kept_between_messages_and_handed_back(
    database_url: str, tmp_path: Path, sink: Sink, masks: Masks, pool_size: int
) -> None:
    """Kept while the plane serves (a pool of three or more), handed back when it stops."""
    engine = create_engine(database_url, pool_size=pool_size)
    settings = mail_settings(database_url, tmp_path, smarthost=f"{HOST}:{sink.port}")
    port = free_port()
    mask = await masks.make()
    try:
        async with mail_plane(settings, engine, host=HOST, port=port):
            for sender in ("alice@example.com", "bob@example.com"):
                await send_async(port, sender, [mask.address], message(to=mask.address))
            kept = engine.sync_engine.pool.checkedout()  # type: ignore[attr-defined]
        assert engine.sync_engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    finally:
        await engine.dispose()
    assert kept == (1 if pool_size >= 3 else 0)
    assert len(sink.messages) == 2
    assert (await mask.counters())["num_forwarded"] == 2
