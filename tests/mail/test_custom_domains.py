"""Mail at custom domains (issue 16 items 2-3): nothing is accepted before the domain is
verified; then its addresses, and those made on first mail, are forwarded, and forwards
and replies are sent and DKIM-signed at the domain itself."""

from __future__ import annotations

import asyncio
import secrets
import smtplib
from collections.abc import Iterator
from email import message_from_bytes, policy
from email.message import EmailMessage

import dkim
import dns.message
import dns.query
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.config import Settings
from maskmail.core.dkim_keys import txt_value
from maskmail.mail.plane import mail_plane
from maskmail.mail.socketmap import netstring
from maskmail.store import accounts, custom_domains
from maskmail.store.addresses import create_address, list_addresses
from maskmail.store.engine import transaction
from tests.dns_server import running_dns
from tests.mail.conftest import DOMAIN, HOST, Sink, message, send_async
from tests.mail.test_policy import ask
from tests.mail.test_replies import _reply
from tests.support import add_custom_domain, free_port

pytestmark = pytest.mark.anyio
SENDER = "news@shop.example"
ZONE: dict[str, list[tuple[str, str]]] = {}


@pytest.fixture(scope="module")
def dns_port() -> Iterator[int]:
    with running_dns(ZONE) as port:
        yield port


async def _domain(
    engine: AsyncEngine, *, verified: bool = True, catch_all: bool = True
) -> tuple[int, str, str]:
    """A user holding a new domain whose DKIM key the test DNS server publishes: the
    user's id, mailbox and domain."""
    name = f"own-{secrets.token_hex(4)}.example"
    mailbox = f"owner-{name}@mailbox.example"
    async with transaction(engine) as conn:
        user_id = await accounts.add_user(conn, mailbox)
        domain_id, value = await add_custom_domain(
            conn, user_id, name, relay_domain=DOMAIN, verified=verified
        )
        if not catch_all:
            await custom_domains.set_catch_all(conn, user_id, domain_id, False)
    ZONE[f"sel1._domainkey.{name}."] = [
        ("TXT", " ".join(f'"{value[i : i + 200]}"' for i in range(0, len(value), 200)))
    ]
    return user_id, mailbox, name


def _verify(data: bytes, dns_port: int) -> tuple[bool, str]:
    """dkimpy's verdict, the key fetched from the test DNS server, and the signing domain."""

    def lookup(name: bytes, timeout: int = 5) -> bytes:
        query = dns.message.make_query(name.decode(), "TXT")
        answer = dns.query.udp(query, HOST, port=dns_port, timeout=timeout)
        return b"".join(b"".join(r.strings) for rrset in answer.answer for r in rrset)

    verifier = dkim.DKIM(data)
    ok = verifier.verify(dnsfunc=lookup)
    return bool(ok), (verifier.domain or b"").decode()


async def _refused(port: int, rcpt: str) -> int:
    with pytest.raises(smtplib.SMTPRecipientsRefused) as caught:
        await send_async(port, SENDER, [rcpt], message(to=rcpt, sender=SENDER))
    return caught.value.recipients[rcpt][0]


async def test_nothing_is_accepted_before_the_domain_is_verified(
    signing_relay: tuple[int, bytes], sink: Sink, relay_engine: AsyncEngine
) -> None:
    port, _ = signing_relay
    user_id, _, name = await _domain(relay_engine, verified=False)
    # Relaying denied, as for any domain that is not the relay's.
    assert await _refused(port, f"anything@{name}") == 550
    assert await _refused(port, f"anything@sub.{name}") == 550
    async with relay_engine.connect() as conn:
        assert await list_addresses(conn, user_id) == []
    assert sink.messages == []


async def test_first_mail_forwards_signed_and_sent_at_the_domain(
    signing_relay: tuple[int, bytes], sink: Sink, relay_engine: AsyncEngine, dns_port: int
) -> None:
    port, _ = signing_relay
    user_id, mailbox, name = await _domain(relay_engine)
    rcpt = f"Orders@{name}"
    assert await send_async(port, SENDER, [rcpt], message(to=rcpt, sender=SENDER)) == {}
    [got] = sink.messages
    forwarded = message_from_bytes(got.data, policy=policy.default)
    async with relay_engine.connect() as conn:
        [made] = await list_addresses(conn, user_id)
    assert made.full_address == f"orders@{name}" and made.subdomain is None
    assert got.rcpt_tos == [mailbox]
    # Envelope sender, From and the signature's d= are all the custom domain: aligned.
    assert got.mail_from.startswith("bounce+") and got.mail_from.endswith(f"@{name}")
    assert str(forwarded["From"]).endswith(f"@{name}>")
    assert str(forwarded["Reply-To"]).endswith(f"@{name}")
    assert _verify(got.data, dns_port) == (True, name)

    # The owner replies through the reverse alias: out from the address, signed alike.
    alias = str(forwarded["Reply-To"])
    assert await send_async(port, mailbox, [alias], _reply(mailbox, alias)) == {}
    reply = sink.messages[-1]
    assert reply.rcpt_tos == [SENDER] and reply.mail_from == f"orders@{name}"
    sent = message_from_bytes(reply.data, policy=policy.default)
    assert isinstance(sent, EmailMessage) and f"orders@{name}" in str(sent["From"])
    assert _verify(reply.data, dns_port) == (True, name)


async def test_relay_addresses_stay_signed_by_the_relay(
    signing_relay: tuple[int, bytes], sink: Sink, relay_engine: AsyncEngine
) -> None:
    port, public = signing_relay
    user_id, _, _ = await _domain(relay_engine)
    async with transaction(relay_engine) as conn:
        made = await create_address(conn, user_id, domain=DOMAIN, length=8)
    await send_async(port, SENDER, [made.full_address], message(to=made.full_address))
    [got] = sink.messages

    def relay_key(name: bytes, timeout: int = 5) -> bytes:
        assert name == f"maskmail._domainkey.{DOMAIN}.".encode()
        return txt_value(public).encode()

    assert dkim.verify(got.data, dnsfunc=relay_key)
    assert got.mail_from.endswith(f"@{DOMAIN}")


async def test_catch_all_off_refuses_unknown_local_parts(
    signing_relay: tuple[int, bytes], sink: Sink, relay_engine: AsyncEngine
) -> None:
    port, _ = signing_relay
    user_id, _, name = await _domain(relay_engine, catch_all=False)
    assert await _refused(port, f"new@{name}") == 550
    async with relay_engine.connect() as conn:
        assert await list_addresses(conn, user_id) == []


async def test_the_policy_service_answers_for_verified_domains(
    settings: Settings, relay_engine: AsyncEngine
) -> None:
    _, _, verified = await _domain(relay_engine, catch_all=False)
    _, _, pending = await _domain(relay_engine, verified=False)
    policy_port = free_port()
    with_policy = settings.model_copy(update={"policy_port": policy_port})
    async with mail_plane(with_policy, relay_engine, host=HOST, port=free_port()):
        unknown = await ask(policy_port, f"nobody@{verified}", SENDER)
        written = await ask(policy_port, f"nobody@{verified.upper()}.", SENDER)
        not_ours = await ask(policy_port, f"nobody@{pending}", SENDER)
    # The verified domain is maskmail's to answer for, however written; the pending one
    # is not (yet).
    assert unknown.startswith("550 5.1.1") and written.startswith("550 5.1.1")
    assert not_ours == "DUNNO"


async def _socketmap(port: int, *requests: bytes) -> list[bytes]:
    reader, writer = await asyncio.open_connection(HOST, port)
    replies = []
    try:
        for one in requests:
            writer.write(netstring(one))
            await writer.drain()
            size = await reader.readuntil(b":")
            replies.append((await reader.readexactly(int(size[:-1]) + 1))[:-1])
    finally:
        writer.close()
    return replies


async def test_the_socketmap_finds_verified_domains_only(
    settings: Settings, relay_engine: AsyncEngine
) -> None:
    _, _, verified = await _domain(relay_engine)
    _, _, pending = await _domain(relay_engine, verified=False)
    policy_port = free_port()
    with_policy = settings.model_copy(update={"policy_port": policy_port})
    async with mail_plane(with_policy, relay_engine, host=HOST, port=free_port()):
        replies = await _socketmap(
            policy_port,
            f"domains {verified}".encode(),
            f"domains someone@{verified.upper()}".encode(),
            f"domains {verified.upper()}.".encode(),
            f"domains {pending}".encode(),
            f"domains .{verified}".encode(),
            f"domains {DOMAIN}".encode(),
            b"other x",
        )
        # The policy protocol still works on the same port.
        action = await ask(policy_port, f"nobody@{pending}", SENDER)
    assert replies == [
        f"OK {verified}".encode(),
        f"OK {verified}".encode(),
        f"OK {verified}".encode(),
        b"NOTFOUND ",
        b"NOTFOUND ",
        b"NOTFOUND ",
        b"PERM no such map",
    ]
    assert action == "DUNNO"
