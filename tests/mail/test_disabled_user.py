"""A disabled user's mail, from the next message on: their addresses take it and drop
it, counting it blocked, as a disabled address does (the sender learns nothing); replies
through their reverse aliases are refused as through a disabled address; their catch-all
makes nothing. Enabled again, it flows again."""

from __future__ import annotations

import asyncio
import smtplib

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.services import admin
from maskmail.store.addresses import list_addresses
from maskmail.store.engine import transaction
from tests.mail.conftest import DOMAIN, HOST, Masks, Sink, counts, message, send_async
from tests.mail.test_first_mail import _holder
from tests.mail.test_replies import _alias, _reply

pytestmark = pytest.mark.anyio


async def _disable(engine: AsyncEngine, user_id: int, disabled: bool = True) -> None:
    async with transaction(engine) as conn:
        await admin.set_disabled(conn, admin.CLI, user_id, disabled)


async def _refused_at_rcpt(port: int, sender: str, rcpt: str, data: bytes) -> tuple[int, bytes]:
    with pytest.raises(smtplib.SMTPRecipientsRefused) as caught:
        await send_async(port, sender, [rcpt], data)
    return caught.value.recipients[rcpt]


async def test_mail_to_a_disabled_users_address_is_dropped_as_a_disabled_addresss(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    await _disable(relay_engine, mask.user_id)
    sent = await send_async(relay, "alice@example.com", [mask.address], message(to=mask.address))
    assert sent == {}
    assert sink.messages == []
    await _disable(relay_engine, mask.user_id, False)  # the API refuses a disabled user's key
    assert await mask.counters() == counts(blocked=1)
    assert (
        await send_async(relay, "alice@example.com", [mask.address], message(to=mask.address)) == {}
    )
    assert len(sink.messages) == 1
    assert await mask.counters() == counts(forwarded=1, blocked=1)


async def test_a_user_disabled_between_rcpt_and_data_has_the_message_dropped(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    # Connecting reads the banner: not on the loop the server runs on.
    client = await asyncio.to_thread(smtplib.SMTP, HOST, relay, timeout=30)
    try:
        await asyncio.to_thread(client.ehlo, "client.example.com")
        await asyncio.to_thread(client.mail, "alice@example.com")
        assert (await asyncio.to_thread(client.rcpt, mask.address))[0] == 250
        await _disable(relay_engine, mask.user_id)
        code, _ = await asyncio.to_thread(client.data, message(to=mask.address))
    finally:
        await asyncio.to_thread(client.quit)
    assert code == 250
    assert sink.messages == []
    await _disable(relay_engine, mask.user_id, False)
    assert await mask.counters() == counts(blocked=1)
    async with relay_engine.connect() as conn:
        made = await conn.execute(
            text("SELECT count(*) FROM reverse_aliases WHERE address_id = :id"),
            {"id": mask.address_id},
        )
        assert made.scalar_one() == 0


async def test_a_disabled_owner_cannot_reply(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    alias, _ = await _alias(relay, sink, mask)
    await _disable(relay_engine, mask.user_id)
    code, said = await _refused_at_rcpt(relay, mask.owner, alias, _reply(mask.owner, alias))
    assert (code, said[:5]) == (550, b"5.7.1")
    assert len(sink.messages) == 1
    await _disable(relay_engine, mask.user_id, False)
    assert await mask.counters() == counts(forwarded=1)


async def test_a_disabled_users_catch_all_makes_nothing(
    relay: int, sink: Sink, relay_engine: AsyncEngine
) -> None:
    owner = await _holder(relay_engine, "off")
    await _disable(relay_engine, owner.user_id)
    rcpt = f"shop@{owner.host}"
    code, said = await _refused_at_rcpt(relay, "alice@example.com", rcpt, message(to=rcpt))
    assert (code, said[:5]) == (550, b"5.1.1")
    async with relay_engine.connect() as conn:
        assert await list_addresses(conn, owner.user_id) == []
    assert sink.messages == []
    assert DOMAIN in owner.host
