"""Disabled addresses, spam with and without block_spam, trusted relays, and loops."""

from __future__ import annotations

from email import message_from_bytes, policy
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.mail.plane import mail_plane
from maskmail.mail.rewrite import LOOP_HEADER
from maskmail.store import accounts
from maskmail.store.engine import transaction
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
SPAM = "X-Spam-Flag: YES\r\nX-Spam-Status: Yes, score=12.0 required=5.0\r\n"


async def test_disabled_address_accepts_discards_and_counts_blocked(
    relay: int, sink: Sink, masks: Masks
) -> None:
    mask = await masks.make(enabled=False)
    assert await send_async(relay, "a@example.com", [mask.address], message(to=mask.address)) == {}
    assert sink.messages == []
    assert await mask.counters() == counts(blocked=1)


async def test_spam_with_block_spam_is_discarded(relay: int, sink: Sink, masks: Masks) -> None:
    mask = await masks.make(block_spam=True)
    await send_async(relay, "a@example.com", [mask.address], message(to=mask.address, extra=SPAM))
    assert sink.messages == []
    assert await mask.counters() == counts(spam=1)


async def test_spam_without_block_spam_is_forwarded_with_its_verdict(
    relay: int, sink: Sink, masks: Masks
) -> None:
    mask = await masks.make()
    await send_async(relay, "a@example.com", [mask.address], message(to=mask.address, extra=SPAM))
    [got] = sink.messages
    forwarded = message_from_bytes(got.data, policy=policy.default)
    assert forwarded["X-Spam-Flag"] == "YES"
    assert str(forwarded["X-Spam-Status"]).startswith("Yes")
    assert await mask.counters() == counts(forwarded=1, spam=1)


async def test_ham_is_not_counted_as_spam(relay: int, sink: Sink, masks: Masks) -> None:
    mask = await masks.make(block_spam=True)
    ham = "X-Spam-Flag: NO\r\nX-Spam-Status: No, score=0.1\r\n"
    await send_async(relay, "a@example.com", [mask.address], message(to=mask.address, extra=ham))
    assert len(sink.messages) == 1
    assert (await mask.counters())["num_spam"] == 0


async def test_verdicts_from_untrusted_hosts_are_ignored_and_removed(
    database_url: str, tmp_path: Path, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    settings = mail_settings(
        database_url, tmp_path, smarthost=f"{HOST}:{sink.port}", trusted_relays="192.0.2.1"
    )
    port = free_port()
    mask = await masks.make(block_spam=True)
    async with mail_plane(settings, relay_engine, host=HOST, port=port):
        data = message(to=mask.address, extra=SPAM)
        await send_async(port, "a@example.com", [mask.address], data)
    [got] = sink.messages
    assert b"X-Spam" not in got.data
    assert (await mask.counters())["num_spam"] == 0


async def test_our_own_loop_marker_is_dropped_uncounted(
    relay: int, sink: Sink, masks: Masks
) -> None:
    mask = await masks.make()
    looped = message(to=mask.address, extra=f"{LOOP_HEADER}: {DOMAIN}\r\n")
    assert await send_async(relay, "a@example.com", [mask.address], looped) == {}
    other = message(to=mask.address, extra=f"{LOOP_HEADER}: other.example\r\n")
    await send_async(relay, "a@example.com", [mask.address], other)
    assert len(sink.messages) == 1
    assert (await mask.counters())["num_forwarded"] == 1


async def test_forward_to_an_owner_mailbox_at_the_relay_is_refused(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    import smtplib

    mask = await masks.make()
    async with transaction(relay_engine) as conn:
        user_id = await accounts.add_user(conn, mask.address)  # an owner whose mailbox is a mask
        from maskmail.store.addresses import create_address

        looping = await create_address(conn, user_id, domain=DOMAIN, length=8)
    with pytest.raises(smtplib.SMTPRecipientsRefused) as caught:
        await send_async(relay, "a@example.com", [looping.full_address], b"Subject: x\r\n\r\nx\r\n")
    code, text = caught.value.recipients[looping.full_address]
    assert (code, text[:5]) == (550, b"5.7.1")
    assert sink.messages == []


async def test_rspamd_outage_lets_mail_through_as_ham(
    database_url: str, tmp_path: Path, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    settings = mail_settings(
        database_url,
        tmp_path,
        smarthost=f"{HOST}:{sink.port}",
        rspamd_url=f"http://{HOST}:{free_port()}",  # nothing listens there
    )
    port = free_port()
    mask = await masks.make(block_spam=True)
    async with mail_plane(settings, relay_engine, host=HOST, port=port):
        await send_async(port, "a@example.com", [mask.address], message(to=mask.address))
    assert len(sink.messages) == 1
    assert await mask.counters() == counts(forwarded=1)


async def test_a_bounce_without_from_gets_no_reverse_alias(
    relay: int, sink: Sink, masks: Masks
) -> None:
    mask = await masks.make()
    bounce = f"To: {mask.address}\r\nSubject: Undelivered\r\n\r\nsorry\r\n".encode()
    assert await send_async(relay, "", [mask.address], bounce) == {}
    [got] = sink.messages
    forwarded = message_from_bytes(got.data, policy=policy.default)
    assert forwarded["Reply-To"] is None
    assert "unknown sender" in str(forwarded["From"])
    assert (await mask.counters())["num_forwarded"] == 1
