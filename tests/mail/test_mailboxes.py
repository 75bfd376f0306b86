"""Forwarding to several mailboxes over real SMTP: one copy to each verified mailbox the
address chose, none to an unverified one, one count; a deleted mailbox's addresses fall
back to the default mailbox."""

from __future__ import annotations

import smtplib
from email import message_from_bytes, policy

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.core.mailboxes import new_proof
from maskmail.store import mailboxes
from maskmail.store.engine import transaction
from tests.mail.conftest import Mask, Masks, Sink, counts, message, send_async
from tests.mail.test_replies import OUTSIDE, _decoded_text, _reply

pytestmark = pytest.mark.anyio


async def _mailbox(engine: AsyncEngine, mask: Mask, email: str, *, verified: bool) -> int:
    proof = new_proof()
    async with transaction(engine) as conn:
        added = await mailboxes.add_mailbox(conn, mask.user_id, email, proof, limit=10)
        if verified:
            await mailboxes.verify_by_token(conn, proof.token_hash)
    return added.id


async def _choose(engine: AsyncEngine, mask: Mask, *ids: int) -> None:
    async with transaction(engine) as conn:
        await mailboxes.set_address_mailboxes(conn, mask.user_id, mask.address_id, ids)


async def test_each_verified_mailbox_gets_one_copy_counted_once(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    one = (await _list(relay_engine, mask))[0]
    work = await _mailbox(relay_engine, mask, "work@example.net", verified=True)
    await _choose(relay_engine, mask, one, work)
    # A mailbox not yet verified gets nothing, even the first message after it is added.
    await _mailbox(relay_engine, mask, "later@example.net", verified=False)
    refused = await send_async(relay, "alice@example.com", [mask.address], message(to=mask.address))
    assert refused == {}
    got = sorted(m.rcpt_tos[0] for m in sink.messages)
    assert got == sorted([mask.owner, "work@example.net"])
    assert all(len(m.rcpt_tos) == 1 for m in sink.messages)
    assert sink.messages[0].data == sink.messages[1].data
    assert await mask.counters() == counts(forwarded=1)


async def test_only_the_chosen_mailbox_gets_mail(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    work = await _mailbox(relay_engine, mask, "work@example.net", verified=True)
    await _choose(relay_engine, mask, work)
    await send_async(relay, "alice@example.com", [mask.address], message(to=mask.address))
    assert [m.rcpt_tos for m in sink.messages] == [["work@example.net"]]
    # Deleted: the address forwarded only to it, so it falls back to the default.
    async with transaction(relay_engine) as conn:
        await mailboxes.delete_mailbox(conn, mask.user_id, work)
    await send_async(relay, "alice@example.com", [mask.address], message(to=mask.address))
    assert [m.rcpt_tos for m in sink.messages] == [["work@example.net"], [mask.owner]]
    assert await mask.counters() == counts(forwarded=2)


async def test_new_addresses_use_the_default_mailbox(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    work = await _mailbox(relay_engine, mask, "work@example.net", verified=True)
    async with transaction(relay_engine) as conn:
        await mailboxes.set_default(conn, mask.user_id, work)
    await send_async(relay, "alice@example.com", [mask.address], message(to=mask.address))
    assert [m.rcpt_tos for m in sink.messages] == [["work@example.net"]]


async def _list(engine: AsyncEngine, mask: Mask) -> list[int]:
    async with transaction(engine, readonly=True) as conn:
        return [m.id for m in await mailboxes.list_mailboxes(conn, mask.user_id)]


async def _alias(relay: int, sink: Sink, mask: Mask) -> str:
    await send_async(relay, OUTSIDE, [mask.address], message(to=mask.address))
    return str(message_from_bytes(sink.messages[-1].data, policy=policy.default)["Reply-To"])


async def test_a_reply_from_any_mailbox_of_the_address_is_scrubbed_of_all(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    one = (await _list(relay_engine, mask))[0]
    work = await _mailbox(relay_engine, mask, "Work.Me@example.net", verified=True)
    await _mailbox(relay_engine, mask, "hidden@example.org", verified=True)
    await _choose(relay_engine, mask, one, work)
    alias = await _alias(relay, sink, mask)
    # From the work mailbox, quoting mailbox one and a mailbox the address does not use.
    data = _reply("work.me@example.net", alias).replace(
        b"Thanks!", f"Thanks! Ask {mask.owner} or Hidden@Example.org.".encode(), 1
    )
    assert mask.owner.encode() in data and b"Hidden@Example.org" in data
    assert await send_async(relay, "work.me@example.net", [alias], data) == {}
    got = sink.messages[-1]
    assert got.rcpt_tos == [OUTSIDE]
    for text in (got.data.decode("utf-8", "replace").lower(), _decoded_text(got.data).lower()):
        for hidden in (mask.owner.split("@")[0], "work.me", "hidden@example.org"):
            assert hidden not in text
    assert await mask.counters() == counts(forwarded=1, replied=1)


async def test_a_mailbox_the_address_does_not_use_cannot_reply(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    await _mailbox(relay_engine, mask, "other@example.net", verified=True)
    await _mailbox(relay_engine, mask, "pending@example.net", verified=False)
    alias = await _alias(relay, sink, mask)
    for sender in ("other@example.net", "pending@example.net"):
        with pytest.raises(smtplib.SMTPRecipientsRefused):
            await send_async(relay, sender, [alias], _reply(sender, alias))
    assert await mask.counters() == counts(forwarded=1)


async def test_writing_first_from_a_second_mailbox_names_neither(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    """A contact's reverse alias (writing first), from mailbox two, with mailbox one in
    the text: it leaves from the relay address, with no mailbox of the owner in it."""
    mask = await masks.make()
    one = (await _list(relay_engine, mask))[0]
    two = await _mailbox(relay_engine, mask, "two@example.net", verified=True)
    await _choose(relay_engine, mask, one, two)
    made = await mask.api.post(
        f"/v3/relay/addresses/{mask.address_id}/contacts",
        json={"email": "shop@example.org"},
        headers=mask.headers,
    )
    assert made.status_code == 200, made.text
    alias = made.json()["reverse_alias"]
    data = (
        f"From: Me <two@example.net>\r\nTo: {alias}\r\nSubject: my order\r\n"
        f"Message-ID: <w1@example.net>\r\n\r\nWrite back to {mask.owner} or two@example.net.\r\n"
    ).encode()
    assert await send_async(relay, "two@example.net", [alias], data) == {}
    [sent] = sink.messages
    assert sent.rcpt_tos == ["shop@example.org"] and sent.mail_from == mask.address
    text = sent.data.decode("utf-8", "replace").lower()
    assert mask.owner.split("@")[0] not in text and "two@example.net" not in text
    assert await mask.counters() == counts(replied=1)
