"""Mail at relay subdomains (issue 15 items 9, 10, 13): addresses on a subdomain are
delivered like any other; unknown local parts there are made on first mail, by the rules.
The limits of catch-all under abuse are in test_first_mail_limits.py."""

from __future__ import annotations

import asyncio
import secrets
import smtplib
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from email import message_from_bytes, policy
from pathlib import Path

import aiosmtplib
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.config import Settings
from maskmail.core import envelope
from maskmail.core.errors import AddressNotFound, InvalidAddress, RateLimited
from maskmail.core.first_mail import FloodGuard
from maskmail.mail import first_mail, recipients
from maskmail.mail.context import MailContext
from maskmail.mail.plane import mail_plane, outbound_for
from maskmail.mail.spam import SpamJudge
from maskmail.store import accounts, address_counts, subdomains
from maskmail.store.addresses import Place, create_address, delete_address, list_addresses
from maskmail.store.engine import transaction
from maskmail.store.tables import addresses
from tests.mail.conftest import DOMAIN, HOST, Sink, mail_settings, message, send_async
from tests.support import free_port

pytestmark = pytest.mark.anyio
SENDER = "orders@shop.example"


@dataclass
class Holder:
    user_id: int
    subdomain_id: int
    mailbox: str
    name: str

    @property
    def host(self) -> str:
        return f"{self.name}.{DOMAIN}"


async def _holder(engine: AsyncEngine, prefix: str, *, catch_all: bool = True) -> Holder:
    """A user with a subdomain; the database outlives the test, so names are new each time."""
    name = f"{prefix}-{secrets.token_hex(4)}"
    mailbox = f"{name}-owner@example.com"
    async with transaction(engine) as conn:
        user_id = await accounts.add_user(conn, mailbox)
        made = await subdomains.claim(conn, user_id, name, domain=DOMAIN)
        if not catch_all:
            await subdomains.change(conn, user_id, made.id, domain=DOMAIN, catch_all=False)
    return Holder(user_id, made.id, mailbox, name)


async def _addresses(engine: AsyncEngine, user_id: int) -> dict[str, str]:
    async with engine.connect() as conn:
        return {a.full_address: a.description for a in await list_addresses(conn, user_id)}


async def _refused(port: int, rcpt: str, sender: str = SENDER) -> tuple[int, bytes]:
    with pytest.raises(smtplib.SMTPRecipientsRefused) as caught:
        await send_async(port, sender, [rcpt], message(to=rcpt, sender=sender))
    return caught.value.recipients[rcpt]


@pytest.fixture
async def limited_relay(
    database_url: str, tmp_path: Path, sink: Sink, relay_engine: AsyncEngine
) -> AsyncIterator[int]:
    """A relay whose users may hold two addresses."""
    settings = mail_settings(
        database_url, tmp_path, smarthost=f"{HOST}:{sink.port}", max_addresses_per_user=2
    )
    port = free_port()
    async with mail_plane(settings, relay_engine, host=HOST, port=port):
        yield port


async def test_an_address_on_a_subdomain_is_delivered(
    relay: int, sink: Sink, relay_engine: AsyncEngine
) -> None:
    owner = await _holder(relay_engine, "known-sub", catch_all=False)
    async with transaction(relay_engine) as conn:
        made = await create_address(
            conn, owner.user_id, domain=DOMAIN, length=8, place=Place.SUBDOMAIN
        )
    assert made.full_address.endswith(f"@{owner.host}")
    await send_async(relay, SENDER, [made.full_address], message(to=made.full_address))
    assert [m.rcpt_tos for m in sink.messages] == [[owner.mailbox]]
    # The same local part at the domain itself is another address: unknown.
    code, _ = await _refused(relay, f"{made.address}@{DOMAIN}")
    assert code == 550


async def test_first_mail_makes_the_address_then_forwards(
    relay: int, sink: Sink, relay_engine: AsyncEngine
) -> None:
    owner = await _holder(relay_engine, "catchy")
    rcpt = f"Shop.Orders@{owner.host}"
    await send_async(relay, SENDER, [rcpt], message(to=rcpt))
    assert [m.rcpt_tos for m in sink.messages] == [[owner.mailbox]]
    made = f"shop.orders@{owner.host}"
    assert await _addresses(relay_engine, owner.user_id) == {made: f"first mail from {SENDER}"}
    # The second message goes to the same address; the counters are the address's.
    await send_async(relay, SENDER, [made], message(to=made))
    async with relay_engine.connect() as conn:
        [address] = await list_addresses(conn, owner.user_id)
        count = await address_counts.total(conn, owner.user_id)
    assert address.num_forwarded == 2 and count == 1


async def test_a_long_sender_is_cut_to_the_description_limit(
    relay: int, sink: Sink, relay_engine: AsyncEngine
) -> None:
    owner = await _holder(relay_engine, "longsend")
    sender = "a" * 60 + "@example.com"
    rcpt = f"x@{owner.host}"
    await send_async(relay, sender, [rcpt], message(to=rcpt))
    [description] = (await _addresses(relay_engine, owner.user_id)).values()
    assert len(description) == 64 and description.startswith("first mail from aaaa")


async def test_catch_all_off_refuses_unknown_local_parts(
    relay: int, sink: Sink, relay_engine: AsyncEngine
) -> None:
    owner = await _holder(relay_engine, "closed", catch_all=False)
    code, text = await _refused(relay, f"new@{owner.host}")
    assert (code, text[:5]) == (550, b"5.1.1")
    assert await _addresses(relay_engine, owner.user_id) == {}
    assert sink.messages == []


@pytest.mark.parametrize("local", ["a+b", "caf\u00e9", "a=b", "a/b", "x" * 65])
async def test_local_parts_outside_the_rule_are_refused(
    settings: Settings, relay_engine: AsyncEngine, local: str
) -> None:
    owner = await _holder(relay_engine, "strict")
    ctx = _context(relay_engine, settings, FloodGuard())
    with pytest.raises(InvalidAddress):
        await recipients.check_may_receive(ctx, f"{local}@{owner.host}", SENDER)
    with pytest.raises(InvalidAddress):
        await first_mail.make(ctx, envelope.parse_mailbox(f"{local}@{owner.host}"), SENDER)
    assert await _addresses(relay_engine, owner.user_id) == {}
    # Upper case is folded, not refused.
    await _first_mail(ctx, f"A.b_C-9@{owner.host}", SENDER)
    assert set(await _addresses(relay_engine, owner.user_id)) == {f"a.b_c-9@{owner.host}"}


async def test_a_recipient_domain_in_upper_case_with_a_final_dot_is_the_same(
    settings: Settings, relay_engine: AsyncEngine
) -> None:
    owner = await _holder(relay_engine, "oneform")
    plain = _context(relay_engine, settings, FloodGuard())
    ctx = replace(plain, domain=f"{DOMAIN.upper()}.", older_domains=frozenset({"Old.TEST."}))
    assert (ctx.domain, ctx.domains) == (plain.domain, plain.domains)
    await _first_mail(ctx, f"Made@{owner.host.upper()}.", SENDER)
    assert set(await _addresses(relay_engine, owner.user_id)) == {f"made@{owner.host}"}


async def test_unknown_and_nested_subdomains_make_nothing(
    relay: int, sink: Sink, relay_engine: AsyncEngine
) -> None:
    owner = await _holder(relay_engine, "realsub")
    assert (await _refused(relay, f"x@nosuchsub.{DOMAIN}"))[0] == 550
    code, text = await _refused(relay, f"x@a.{owner.host}")
    assert (code, text[:5]) == (550, b"5.7.1")
    assert await _addresses(relay_engine, owner.user_id) == {}


async def test_deleted_addresses_are_never_made_again(
    relay: int, sink: Sink, relay_engine: AsyncEngine
) -> None:
    owner = await _holder(relay_engine, "graves")
    rcpt = f"once@{owner.host}"
    await send_async(relay, SENDER, [rcpt], message(to=rcpt))
    async with transaction(relay_engine) as conn:
        [made] = await list_addresses(conn, owner.user_id)
        await delete_address(conn, owner.user_id, made.id)
    code, _ = await _refused(relay, rcpt)
    assert code == 550
    assert await _addresses(relay_engine, owner.user_id) == {}
    assert len(sink.messages) == 1


async def test_the_address_limit_holds(
    limited_relay: int, sink: Sink, relay_engine: AsyncEngine
) -> None:
    owner = await _holder(relay_engine, "capped")
    for local in ("one", "two"):
        rcpt = f"{local}@{owner.host}"
        await send_async(limited_relay, f"{local}@shop.example", [rcpt], message(to=rcpt))
    code, _ = await _refused(limited_relay, f"three@{owner.host}")
    assert code == 550
    assert len(await _addresses(relay_engine, owner.user_id)) == 2


async def test_each_user_gets_only_their_own_subdomains_addresses(
    relay: int, sink: Sink, relay_engine: AsyncEngine
) -> None:
    alice = await _holder(relay_engine, "alice-sub")
    bob = await _holder(relay_engine, "bob-sub")
    await send_async(relay, SENDER, [f"hi@{bob.host}"], message(to=f"hi@{bob.host}"))
    assert await _addresses(relay_engine, alice.user_id) == {}
    assert set(await _addresses(relay_engine, bob.user_id)) == {f"hi@{bob.host}"}
    assert [m.rcpt_tos for m in sink.messages] == [[bob.mailbox]]


async def test_a_renamed_subdomains_old_addresses_are_refused(
    relay: int, sink: Sink, relay_engine: AsyncEngine
) -> None:
    owner = await _holder(relay_engine, "before")
    after = f"after-{secrets.token_hex(4)}"
    await send_async(relay, SENDER, [f"kept@{owner.host}"], message(to="x"))
    async with transaction(relay_engine) as conn:
        await subdomains.change(conn, owner.user_id, owner.subdomain_id, domain=DOMAIN, name=after)
    assert await _addresses(relay_engine, owner.user_id) == {}
    # The old name belongs to nobody now: neither the old address nor a new one is made.
    assert (await _refused(relay, f"kept@{owner.host}"))[0] == 550
    assert (await _refused(relay, f"fresh@{owner.host}"))[0] == 550
    await send_async(relay, SENDER, [f"kept@{after}.{DOMAIN}"], message(to="x"))
    assert set(await _addresses(relay_engine, owner.user_id)) == {f"kept@{after}.{DOMAIN}"}


async def _first_mail(ctx: MailContext, rcpt: str, sender: str) -> None:
    """What the handler does for a new local part: RCPT decides, the message makes it."""
    accepted = await recipients.check_may_receive(ctx, rcpt, sender)
    await first_mail.make(ctx, accepted.located.mailbox, sender)


def _context(engine: AsyncEngine, settings: Settings, guard: FloodGuard) -> MailContext:
    return MailContext(
        engine=engine,
        domain=DOMAIN,
        older_domains=frozenset({"old.test"}),
        hostname="mx.relay.test",
        outbound=outbound_for(settings),
        judge=SpamJudge(()),
        bounce_secret=b"s" * 32,
        max_addresses_per_user=1000,
        first_mail=guard,
    )


async def test_a_flood_from_one_sender_is_throttled(
    settings: Settings, relay_engine: AsyncEngine
) -> None:
    owner = await _holder(relay_engine, "flooded")
    ctx = _context(relay_engine, settings, FloodGuard(per_sender=3))
    for i in range(3):
        await _first_mail(ctx, f"n{i}@{owner.host}", "spam@bad.example")
    with pytest.raises(RateLimited):
        await recipients.check_may_receive(ctx, f"n3@{owner.host}", "SPAM@bad.example")
    # Known addresses still take the sender's mail; other senders still make new ones.
    await recipients.check_may_receive(ctx, f"n0@{owner.host}", "spam@bad.example")
    await _first_mail(ctx, f"n4@{owner.host}", "friend@good.example")
    made = set(await _addresses(relay_engine, owner.user_id))
    assert made == {f"n{i}@{owner.host}" for i in (0, 1, 2, 4)}


def _each_in_turn(port: int, sender: str, rcpts: list[str]) -> dict[str, tuple[int, bytes]]:
    """One message per recipient over one connection; the refusals, by recipient."""
    refused: dict[str, tuple[int, bytes]] = {}
    with smtplib.SMTP(HOST, port, timeout=30) as client:
        for rcpt in rcpts:
            try:
                client.sendmail(sender, [rcpt], message(to=rcpt, sender=sender))
            except smtplib.SMTPRecipientsRefused as exc:
                refused.update(exc.recipients)
    return refused


async def test_a_flood_over_smtp_is_told_to_try_later(
    relay: int, sink: Sink, relay_engine: AsyncEngine
) -> None:
    """Eleven new local parts from one sender: the relay's guard makes ten, then 450."""
    owner = await _holder(relay_engine, "smtpflood")
    rcpts = [f"f{i}@{owner.host}" for i in range(11)]
    refused = await asyncio.to_thread(_each_in_turn, relay, "flood@bad.example", rcpts)
    assert list(refused) == [rcpts[10]]
    code, text = refused[rcpts[10]]
    assert (code, text[:5]) == (450, b"4.7.1")
    assert set(await _addresses(relay_engine, owner.user_id)) == set(rcpts[:10])
    assert len(sink.messages) == 10


async def test_refusals_do_not_use_up_the_senders_allowance(
    settings: Settings, relay_engine: AsyncEngine
) -> None:
    owner = await _holder(relay_engine, "allowance")
    ctx = _context(relay_engine, settings, FloodGuard(per_sender=1))
    async with transaction(relay_engine) as conn:
        made = await create_address(
            conn, owner.user_id, domain=DOMAIN, length=8, place=Place.SUBDOMAIN
        )
        await delete_address(conn, owner.user_id, made.id)
    with pytest.raises(AddressNotFound):
        await recipients.check_may_receive(ctx, made.full_address, SENDER)
    await recipients.check_may_receive(ctx, f"fine@{owner.host}", SENDER)


@pytest.mark.slow
async def test_200_concurrent_first_mails_make_each_address_once(
    settings: Settings, relay_engine: AsyncEngine
) -> None:
    owner = await _holder(relay_engine, "busy")
    ctx = _context(relay_engine, settings, FloodGuard())
    # 100 local parts, each written to twice at once, each time by another sender.
    checks = [_first_mail(ctx, f"p{i % 100}@{owner.host}", f"s{i}@example.com") for i in range(200)]
    await asyncio.gather(*checks)
    made = await _addresses(relay_engine, owner.user_id)
    assert set(made) == {f"p{i}@{owner.host}" for i in range(100)}
    async with relay_engine.connect() as conn:
        count = await address_counts.total(conn, owner.user_id)
        rows = await conn.scalar(select(func.count()).where(addresses.c.user_id == owner.user_id))
    assert count == 100 and rows == 100


@pytest.fixture
async def wide_relay(
    database_url: str, tmp_path: Path, sink: Sink, relay_engine: AsyncEngine
) -> AsyncIterator[int]:
    """A relay that takes 200 connections from one client at once."""
    settings = mail_settings(
        database_url,
        tmp_path,
        smarthost=f"{HOST}:{sink.port}",
        smtp_max_connections=250,
        smtp_max_per_client=250,
    )
    port = free_port()
    async with mail_plane(settings, relay_engine, host=HOST, port=port):
        yield port


@pytest.mark.slow
async def test_200_concurrent_first_mails_are_each_forwarded_and_counted_once(
    wide_relay: int, sink: Sink, relay_engine: AsyncEngine
) -> None:
    """Whole messages, each on its own connection, all at once: 100 new local parts,
    each written to twice by different senders."""
    owner = await _holder(relay_engine, "crowd")

    async def mail(i: int) -> None:
        rcpt = f"c{i % 100}@{owner.host}"
        sender = f"s{i}@example.com"
        await aiosmtplib.send(
            message(to=rcpt, sender=sender),
            sender=sender,
            recipients=[rcpt],
            hostname=HOST,
            port=wide_relay,
            timeout=120,
        )

    await asyncio.gather(*(mail(i) for i in range(200)))
    assert len(sink.messages) == 200
    assert {tuple(m.rcpt_tos) for m in sink.messages} == {(owner.mailbox,)}
    async with relay_engine.connect() as conn:
        made = await list_addresses(conn, owner.user_id)
        count = await address_counts.total(conn, owner.user_id)
    assert sorted(a.full_address for a in made) == sorted(f"c{i}@{owner.host}" for i in range(100))
    assert count == 100
    assert [a.num_forwarded for a in made] == [2] * 100


async def test_replies_from_an_address_made_on_first_mail_leave_from_it(
    relay: int, sink: Sink, relay_engine: AsyncEngine
) -> None:
    owner = await _holder(relay_engine, "replies")
    address = f"desk@{owner.host}"
    await send_async(relay, SENDER, [address], message(to=address, sender=SENDER))
    [forward] = sink.messages
    alias = str(message_from_bytes(forward.data, policy=policy.default)["Reply-To"])
    reply = (
        f"From: Owner <{owner.mailbox}>\r\nTo: {alias}\r\nSubject: Re: hello\r\n"
        f"Message-ID: <r-1@example.com>\r\n\r\nThanks, {owner.mailbox}.\r\n"
    ).encode()
    assert await send_async(relay, owner.mailbox, [alias], reply) == {}
    sent = sink.messages[1]
    assert sent.rcpt_tos == [SENDER] and sent.mail_from == address
    assert owner.mailbox not in sent.data.decode()
    out = message_from_bytes(sent.data, policy=policy.default)
    assert str(out["From"]) == address


async def test_nothing_is_made_under_an_older_domain(
    settings: Settings, relay_engine: AsyncEngine
) -> None:
    owner = await _holder(relay_engine, "moved")
    ctx = _context(relay_engine, settings, FloodGuard())
    with pytest.raises(AddressNotFound):
        await recipients.check_may_receive(ctx, f"x@{owner.name}.old.test", SENDER)
    assert await _addresses(relay_engine, owner.user_id) == {}
    await _first_mail(ctx, f"x@{owner.host}", SENDER)
    assert set(await _addresses(relay_engine, owner.user_id)) == {f"x@{owner.host}"}
