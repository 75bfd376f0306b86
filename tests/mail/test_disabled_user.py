"""A disabled user's mail: refused at RCPT as an unknown address, from the next message
on, for their addresses, their reverse aliases and their catch-all; enabled, it flows
again."""

from __future__ import annotations

import smtplib

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.services import admin
from maskmail.store.addresses import list_addresses
from maskmail.store.engine import transaction
from tests.mail.conftest import DOMAIN, Masks, Sink, counts, message, send_async
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


async def test_mail_to_a_disabled_users_address_is_refused_at_rcpt(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    await _disable(relay_engine, mask.user_id)
    code, text = await _refused_at_rcpt(
        relay, "alice@example.com", mask.address, message(to=mask.address)
    )
    assert (code, text[:5]) == (550, b"5.1.1")
    assert sink.messages == []
    await _disable(relay_engine, mask.user_id, False)
    assert (
        await send_async(relay, "alice@example.com", [mask.address], message(to=mask.address)) == {}
    )
    assert len(sink.messages) == 1
    assert await mask.counters() == counts(forwarded=1)


async def test_a_disabled_owner_cannot_reply(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    alias, _ = await _alias(relay, sink, mask)
    await _disable(relay_engine, mask.user_id)
    code, text = await _refused_at_rcpt(relay, mask.owner, alias, _reply(mask.owner, alias))
    assert (code, text[:5]) == (550, b"5.1.1")
    assert len(sink.messages) == 1


async def test_a_disabled_users_catch_all_makes_nothing(
    relay: int, sink: Sink, relay_engine: AsyncEngine
) -> None:
    owner = await _holder(relay_engine, "off")
    await _disable(relay_engine, owner.user_id)
    rcpt = f"shop@{owner.host}"
    code, text = await _refused_at_rcpt(relay, "alice@example.com", rcpt, message(to=rcpt))
    assert (code, text[:5]) == (550, b"5.1.1")
    async with relay_engine.connect() as conn:
        assert await list_addresses(conn, owner.user_id) == []
    assert sink.messages == []
    assert DOMAIN in owner.host
