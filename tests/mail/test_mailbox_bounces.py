"""Bounces of one copy of a message sent to several mailboxes, over real SMTP: they count
against that mailbox, pause it at the threshold and tell the owner at another mailbox
(the default, unless it is the one bouncing), and the address keeps forwarding to its
other mailbox."""

from __future__ import annotations

from collections.abc import AsyncIterator
from email import message_from_bytes, policy
from pathlib import Path

import dkim
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.config import Settings
from maskmail.mail.dkim import generate_key, txt_value
from maskmail.mail.plane import mail_plane
from maskmail.store import mailboxes, tables
from maskmail.store.engine import transaction
from tests.mail.conftest import HOST, Mask, Masks, Sink, mail_settings, message, send_async
from tests.mail.test_bounces import THRESHOLD, bounce_back
from tests.mail.test_mailboxes import _choose, _list, _mailbox
from tests.support import free_port

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(database_url: str, tmp_path: Path, sink: Sink) -> Settings:
    return mail_settings(
        database_url, tmp_path, smarthost=f"{HOST}:{sink.port}", bounce_pause_threshold=THRESHOLD
    )


async def _sent_to_two(
    relay: int, sink: Sink, masks: Masks, engine: AsyncEngine
) -> tuple[Mask, int, int, dict[str, str]]:
    """A mask forwarding to mailbox one and a work mailbox, after one message: the
    bounce address each copy carried, by mailbox."""
    mask = await masks.make()
    one = (await _list(engine, mask))[0]
    work = await _mailbox(engine, mask, "work@example.net", verified=True)
    await _choose(engine, mask, one, work)
    await send_async(relay, "alice@example.com", [mask.address], message(to=mask.address))
    return mask, one, work, {m.rcpt_tos[0]: m.mail_from for m in sink.messages}


async def test_a_mailbox_that_bounces_is_paused_and_the_address_stays(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask, one, work, senders = await _sent_to_two(relay, sink, masks, relay_engine)
    assert senders["work@example.net"].startswith(f"bounce+{mask.address_id}-{work}.")
    assert senders[mask.owner].startswith(f"bounce+{mask.address_id}-{one}.")
    for _ in range(THRESHOLD):
        await bounce_back(relay, senders["work@example.net"], mask)
    # The owner hears of it at the default mailbox, from the null sender.
    [notice] = [m for m in sink.messages if m.mail_from == "<>"]
    assert notice.rcpt_tos == [mask.owner]
    parsed = message_from_bytes(notice.data, policy=policy.default)
    assert "paused" in str(parsed["Subject"])
    assert b"work@example.net" not in notice.data
    # The address is still enabled, and mail now reaches only the other mailbox.
    shown = await mask.api.get(f"/v3/relay/addresses/{mask.address_id}", headers=mask.headers)
    assert shown.json()["enabled"] is True
    before = len(sink.messages)
    await send_async(relay, "alice@example.com", [mask.address], message(to=mask.address))
    assert [m.rcpt_tos for m in sink.messages[before:]] == [[mask.owner]]
    async with transaction(relay_engine, readonly=True) as conn:
        assert [m.id for m in await mailboxes.list_mailboxes(conn, mask.user_id)] == [one, work]
    # Resumed by its owner: both get mail again, and one new bounce does not pause it.
    url = f"/v3/relay/mailboxes/{work}"
    refused = await mask.api.patch(url, json={"paused": True}, headers=mask.headers)
    assert refused.status_code == 422
    resumed = await mask.api.patch(url, json={"paused": False}, headers=mask.headers)
    assert resumed.status_code == 200 and resumed.json()["id"] == work
    await bounce_back(relay, senders["work@example.net"], mask)
    before = len(sink.messages)
    await send_async(relay, "alice@example.com", [mask.address], message(to=mask.address))
    assert sorted(m.rcpt_tos[0] for m in sink.messages[before:]) == sorted(
        [mask.owner, "work@example.net"]
    )


async def test_a_bounce_below_the_threshold_pauses_nothing(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask, _, _, senders = await _sent_to_two(relay, sink, masks, relay_engine)
    for _ in range(THRESHOLD - 1):
        await bounce_back(relay, senders["work@example.net"], mask)
    before = len(sink.messages)
    await send_async(relay, "alice@example.com", [mask.address], message(to=mask.address))
    assert sorted(m.rcpt_tos[0] for m in sink.messages[before:]) == sorted(
        [mask.owner, "work@example.net"]
    )


@pytest.fixture
async def signed_relay(
    settings: Settings, relay_engine: AsyncEngine
) -> AsyncIterator[tuple[int, bytes]]:
    """This module's relay, with a DKIM key: its port and the public key."""
    private, public = generate_key()
    settings.dkim_key_path.write_bytes(private)
    port = free_port()
    async with mail_plane(settings, relay_engine, host=HOST, port=port):
        yield port, public


async def test_the_pause_notice_is_signed_as_forwards_are(
    signed_relay: tuple[int, bytes], sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    relay, public = signed_relay
    mask, _, _, senders = await _sent_to_two(relay, sink, masks, relay_engine)
    for _ in range(THRESHOLD):
        await bounce_back(relay, senders["work@example.net"], mask)
    [notice] = [m for m in sink.messages if m.mail_from == "<>"]
    assert notice.data.startswith(b"DKIM-Signature: ")
    assert dkim.verify(notice.data, dnsfunc=lambda name, timeout=5: txt_value(public).encode())


async def test_a_default_mailbox_that_bounces_is_told_of_at_another(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask, _, _, senders = await _sent_to_two(relay, sink, masks, relay_engine)
    for _ in range(THRESHOLD):
        await bounce_back(relay, senders[mask.owner], mask)
    # Not at the default: that is the mailbox that bounces.
    [notice] = [m for m in sink.messages if m.mail_from == "<>"]
    assert notice.rcpt_tos == ["work@example.net"]
    # Once the other is paused too, there is nowhere left to tell: no notice is sent.
    for _ in range(THRESHOLD):
        await bounce_back(relay, senders["work@example.net"], mask)
    assert len([m for m in sink.messages if m.mail_from == "<>"]) == 1
    async with transaction(relay_engine, readonly=True) as conn:
        paused = await conn.scalars(
            select(tables.mailboxes.c.paused_time).where(tables.mailboxes.c.user_id == mask.user_id)
        )
        assert [when is not None for when in paused] == [True, True]
