"""Replies through reverse aliases, over real SMTP: the round trip, and who is refused."""

from __future__ import annotations

import asyncio
import base64
import quopri
import re
import smtplib
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import getaddresses

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.store import accounts
from maskmail.store.engine import transaction
from tests.mail.conftest import Mask, Masks, Sink, counts, message, send_async

pytestmark = pytest.mark.anyio
OUTSIDE = "alice@example.com"


async def _forwarded(relay: int, sink: Sink, mask: Mask) -> EmailMessage:
    """An outside sender writes to the mask; the forward the owner got."""
    before = len(sink.messages)
    refused = await send_async(relay, OUTSIDE, [mask.address], message(to=mask.address))
    assert refused == {}
    got = sink.messages[before]
    assert got.rcpt_tos == [mask.owner]
    forwarded = message_from_bytes(got.data, policy=policy.default)
    assert isinstance(forwarded, EmailMessage)
    return forwarded


def _reply(
    owner: str,
    to: str,
    *,
    in_reply_to: str = "<original@example.com>",
    author: str | None = None,
    extra: str = "",
) -> bytes:
    """The owner's reply as a mail client writes it: the owner's address everywhere."""
    shouting = owner.upper()
    reply = EmailMessage()
    reply["From"] = f"Owner Person <{author or owner}>"
    reply["To"] = to
    reply["Cc"] = f"Owner Person <{owner}>"
    reply["Subject"] = f"Re: hello (from {owner})"
    reply["Message-ID"] = "<reply-1@mail.example.net>"
    reply["In-Reply-To"] = in_reply_to
    reply["References"] = f"<older@example.com> {in_reply_to}"
    reply["User-Agent"] = "Mail 1.0"
    reply["X-Originating-Email"] = owner
    reply.set_content(
        f"Thanks!\n\nOn Monday, Owner Person <{shouting}> wrote:\n> hello\n"
        f"-- \nwrite to {owner.title()} any time\n",
        cte="quoted-printable",
    )
    reply.add_alternative(
        f'<p>Thanks! <a href="mailto:{owner}">me</a> '
        f"{owner.replace('@', '&#64;')} "
        f'<a href="https://example.net/?u={owner.replace("@", "%40")}">x</a></p>',
        subtype="html",
        cte="base64",
    )
    for name, value in (line.split(": ", 1) for line in extra.splitlines() if line):
        reply[name] = value
    return reply.as_bytes(policy=policy.SMTP)


def _decoded_text(data: bytes) -> str:
    parsed = message_from_bytes(data, policy=policy.default)
    parts = [str(parsed.items())]
    for part in parsed.walk():
        if part.get_content_maintype() == "text":
            parts.append(part.get_content())
    return "\n".join(parts)


async def _alias(relay: int, sink: Sink, mask: Mask) -> tuple[str, EmailMessage]:
    forwarded = await _forwarded(relay, sink, mask)
    return str(forwarded["Reply-To"]), forwarded


async def test_round_trip_hides_the_owner(relay: int, sink: Sink, masks: Masks) -> None:
    mask = await masks.make()
    alias, forwarded = await _alias(relay, sink, mask)
    original_id = str(forwarded["Message-ID"])
    data = _reply(mask.owner, alias, in_reply_to=original_id)
    assert await send_async(relay, mask.owner, [alias], data) == {}

    got = sink.messages[-1]
    assert got.rcpt_tos == [OUTSIDE]
    assert got.mail_from == mask.address
    raw_text = got.data.decode("utf-8", "replace").lower()
    decoded = _decoded_text(got.data).lower()
    owner_local = mask.owner.split("@")[0]
    for text in (raw_text, decoded):
        assert owner_local not in text
    sent = message_from_bytes(got.data, policy=policy.default)
    [(display, address)] = getaddresses([str(sent["From"])])
    assert (display, address) == ("", mask.address)
    assert str(sent["To"]) == OUTSIDE
    assert sent["In-Reply-To"] == original_id
    assert str(sent["References"]).split() == ["<older@example.com>", original_id]
    assert sent["Message-ID"] == "<reply-1@mail.example.net>"
    assert sent["Cc"] is None and sent["User-Agent"] is None
    assert mask.address in str(sent["Subject"])
    # The relay address took the owner's place, in each form the owner's address had.
    assert f"<{mask.address}> wrote" in decoded
    assert f"mailto:{mask.address}" in decoded
    assert mask.address.replace("@", "&#64;") in decoded
    assert mask.address.replace("@", "%40") in decoded
    assert await mask.counters() == counts(forwarded=1, replied=1)


async def test_display_name_only_when_the_owner_chose(
    relay: int, sink: Sink, masks: Masks, relay_engine: AsyncEngine
) -> None:
    mask = await masks.make()
    alias, _ = await _alias(relay, sink, mask)
    async with transaction(relay_engine) as conn:
        await accounts.set_show_name(conn, mask.owner, True)
    assert await send_async(relay, mask.owner, [alias], _reply(mask.owner, alias)) == {}
    sent = message_from_bytes(sink.messages[-1].data, policy=policy.default)
    assert getaddresses([str(sent["From"])]) == [("Owner Person", mask.address)]


async def test_owner_matches_in_any_case(relay: int, sink: Sink, masks: Masks) -> None:
    mask = await masks.make()
    alias, _ = await _alias(relay, sink, mask)
    local, _, domain = mask.owner.partition("@")
    shouted = f"{local.upper()}@{domain.upper()}"
    data = _reply(mask.owner, alias, author=shouted)
    assert await send_async(relay, shouted, [alias.upper()], data) == {}
    assert await mask.counters() == counts(forwarded=1, replied=1)


async def _refused_at_rcpt(relay: int, sender: str, alias: str, data: bytes) -> tuple[int, str]:
    with pytest.raises(smtplib.SMTPRecipientsRefused) as caught:
        await send_async(relay, sender, [alias], data)
    code, text = caught.value.recipients[alias]
    return code, text.decode() if isinstance(text, bytes) else text


async def _refused_at_data(relay: int, sender: str, alias: str, data: bytes) -> tuple[int, str]:
    with pytest.raises(smtplib.SMTPDataError) as caught:
        await send_async(relay, sender, [alias], data)
    error = caught.value.smtp_error
    return caught.value.smtp_code, error.decode() if isinstance(error, bytes) else error


@pytest.mark.parametrize(
    "sender",
    [
        "stranger@example.net",
        "",
        "{local}+tag@{domain}",
        "{local}@{domain}.evil.test",
        "x{local}@{domain}",
        "{local}@sub.{domain}",
    ],
)
@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
async def test_strangers_are_refused(relay: int, sink: Sink, masks: Masks, sender: str) -> None:
    mask = await masks.make()
    alias, _ = await _alias(relay, sink, mask)
    local, _, domain = mask.owner.partition("@")
    envelope = sender.format(local=local, domain=domain)
    before = len(sink.messages)
    code, text = await _refused_at_rcpt(relay, envelope, alias, _reply(mask.owner, alias))
    assert (code, text[:5]) == (550, "5.7.1")
    assert len(sink.messages) == before
    assert await mask.counters() == counts(forwarded=1)


@pytest.mark.slow
async def test_spoofed_from_with_mismatched_envelope(relay: int, sink: Sink, masks: Masks) -> None:
    mask = await masks.make()
    alias, _ = await _alias(relay, sink, mask)
    # The From header says owner; the envelope does not.
    code, _ = await _refused_at_rcpt(relay, "mallory@example.net", alias, _reply(mask.owner, alias))
    assert code == 550
    # The envelope says owner; the From header does not, or names two authors.
    for author in ("mallory@example.net", f"{mask.owner}, mallory@example.net"):
        await _refused_for_from(relay, mask, alias, author)
    assert len(sink.messages) == 1
    assert await mask.counters() == counts(forwarded=1)


async def _refused_for_from(relay: int, mask: Mask, alias: str, author: str) -> None:
    """The owner's envelope with this From header: refused after DATA as not the owner."""
    data = _reply(mask.owner, alias).replace(
        f"From: Owner Person <{mask.owner}>".encode(), f"From: {author}".encode()
    )
    assert f"From: {author}".encode() in data
    code, text = await _refused_at_data(relay, mask.owner, alias, data)
    assert (code, text[:5]) == (550, "5.7.1")


def _auth(results: str) -> str:
    return f"Authentication-Results: relay.test; {results}\n"


@pytest.mark.parametrize(
    ("headers", "accepted"),
    [
        (_auth("spf=pass smtp.mailfrom={owner}; dkim=none"), True),
        (_auth("spf=fail smtp.mailfrom={owner}; dkim=pass header.d={domain}"), True),
        (_auth("spf=fail smtp.mailfrom={owner}; dkim=fail header.d={domain}"), False),
        (_auth("spf=softfail smtp.mailfrom={owner}"), False),
        (_auth("spf=pass smtp.mailfrom=mallory@evil.test; dkim=pass header.d=evil.test"), False),
        # A pass the sender wrote below the trusted relay's own header counts for nothing.
        (
            _auth("spf=fail smtp.mailfrom={owner}")
            + _auth("spf=pass smtp.mailfrom={owner}").replace("relay.test", "forged.test"),
            False,
        ),
        (_auth("arc=none"), True),
    ],
)
async def test_trusted_relay_authentication_results(
    relay: int, sink: Sink, masks: Masks, headers: str, accepted: bool
) -> None:
    mask = await masks.make()
    alias, _ = await _alias(relay, sink, mask)
    domain = mask.owner.partition("@")[2]
    extra = headers.format(owner=mask.owner, domain=domain)
    # Prepended, as the trusted relay in front of maskmail adds it.
    data = extra.replace("\n", "\r\n").encode() + _reply(mask.owner, alias)
    if accepted:
        assert await send_async(relay, mask.owner, [alias], data) == {}
        assert await mask.counters() == counts(forwarded=1, replied=1)
    else:
        code, text = await _refused_at_data(relay, mask.owner, alias, data)
        assert (code, text[:5]) == (550, "5.7.1")
        assert "SPF and DKIM" in text
        assert len(sink.messages) == 1
        assert await mask.counters() == counts(forwarded=1)


async def test_another_user_cannot_use_the_alias(relay: int, sink: Sink, masks: Masks) -> None:
    alice_mask, bob_mask = await masks.make(), await masks.make()
    alias, forwarded = await _alias(relay, sink, alice_mask)
    await _forwarded(relay, sink, bob_mask)
    # Bob, from his own mailbox, points at Alice's thread in every header he can.
    data = _reply(bob_mask.owner, alias, in_reply_to=str(forwarded["Message-ID"]))
    code, _ = await _refused_at_rcpt(relay, bob_mask.owner, alias, data)
    assert code == 550
    # Bob forging Alice's envelope is caught by the trusted relay's SPF/DKIM results.
    forged = _auth(f"spf=fail smtp.mailfrom={alice_mask.owner}").replace(
        "\n", "\r\n"
    ).encode() + _reply(alice_mask.owner, alias, in_reply_to=str(forwarded["Message-ID"]))
    code, _ = await _refused_at_data(relay, alice_mask.owner, alias, forged)
    assert code == 550
    assert len(sink.messages) == 2
    assert await alice_mask.counters() == counts(forwarded=1)
    assert await bob_mask.counters() == counts(forwarded=1)


async def test_disabled_address_refuses_with_a_reason(relay: int, sink: Sink, masks: Masks) -> None:
    mask = await masks.make()
    alias, _ = await _alias(relay, sink, mask)
    response = await mask.api.patch(
        f"/v3/relay/addresses/{mask.address_id}", headers=mask.headers, json={"enabled": False}
    )
    assert response.status_code == 200
    code, text = await _refused_at_rcpt(relay, mask.owner, alias, _reply(mask.owner, alias))
    assert (code, text[:5]) == (550, "5.7.1")
    assert "disabled" in text
    # A stranger is not told that the address is disabled.
    _, stranger_text = await _refused_at_rcpt(
        relay, "mallory@example.net", alias, _reply(mask.owner, alias)
    )
    assert "disabled" not in stranger_text
    assert await mask.counters() == counts(forwarded=1)


async def test_unknown_reverse_alias(relay: int, masks: Masks) -> None:
    mask = await masks.make()
    alias = "r.aaaaaaaaaaaaaaaaaaaaaaaa@relay.test"
    code, text = await _refused_at_rcpt(relay, mask.owner, alias, _reply(mask.owner, alias))
    assert (code, text[:5]) == (550, "5.1.1")


async def test_smarthost_failures_count_nothing(relay: int, sink: Sink, masks: Masks) -> None:
    mask = await masks.make()
    alias, _ = await _alias(relay, sink, mask)
    for reply, code in (("451 4.3.0 later", 451), ("550 5.1.1 no such user", 550)):
        sink.handler.reply = reply
        got, _ = await _refused_at_data(relay, mask.owner, alias, _reply(mask.owner, alias))
        assert got == code
    sink.handler.reply = None
    assert await mask.counters() == counts(forwarded=1)
    assert await send_async(relay, mask.owner, [alias], _reply(mask.owner, alias)) == {}
    assert await mask.counters() == counts(forwarded=1, replied=1)


async def test_write_first_through_a_contact(relay: int, sink: Sink, masks: Masks) -> None:
    mask = await masks.make()
    response = await mask.api.post(
        f"/v3/relay/addresses/{mask.address_id}/contacts",
        headers=mask.headers,
        json={"email": "shop@example.org"},
    )
    assert response.status_code == 200, response.text
    alias = response.json()["reverse_alias"]
    first = EmailMessage()
    first["From"] = mask.owner
    first["To"] = alias
    first["Subject"] = "my order"
    first.set_content(f"Please write back to me. -- {mask.owner}\n")
    assert await send_async(relay, mask.owner, [alias], first.as_bytes(policy=policy.SMTP)) == {}
    [got] = sink.messages
    assert got.rcpt_tos == ["shop@example.org"]
    sent = message_from_bytes(got.data, policy=policy.default)
    assert getaddresses([str(sent["From"])]) == [("", mask.address)]
    assert sent["Message-ID"] is not None and sent["Date"] is not None
    assert mask.owner.split("@")[0] not in got.data.decode().lower()
    assert await mask.counters() == counts(replied=1)


@pytest.mark.parametrize("encoding", ["8bit", "quoted-printable", "base64"])
async def test_owner_address_removed_in_every_transfer_encoding(
    relay: int, sink: Sink, masks: Masks, encoding: str
) -> None:
    mask = await masks.make()
    alias, _ = await _alias(relay, sink, mask)
    text = f"Grüße von {mask.owner.upper()}\r\n"
    body = {
        "8bit": text.encode(),
        "quoted-printable": quopri.encodestring(text.encode()),
        "base64": base64.encodebytes(text.encode()),
    }[encoding]
    data = (
        f"From: {mask.owner}\r\nTo: {alias}\r\nSubject: x\r\nMIME-Version: 1.0\r\n"
        f"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: {encoding}\r\n"
        "\r\n"
    ).encode() + body.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    assert await send_async(relay, mask.owner, [alias], data) == {}
    sent = message_from_bytes(sink.messages[-1].data, policy=policy.default)
    assert isinstance(sent, EmailMessage)
    content = sent.get_content()
    assert "Grüße von" in content
    assert re.search(re.escape(mask.address), content, re.IGNORECASE)
    assert mask.owner.split("@")[0] not in sink.messages[-1].data.decode().lower()


async def test_concurrent_replies_count_exactly(relay: int, sink: Sink, masks: Masks) -> None:
    mask = await masks.make()
    alias, _ = await _alias(relay, sink, mask)
    results = await asyncio.gather(
        *(send_async(relay, mask.owner, [alias], _reply(mask.owner, alias)) for _ in range(12))
    )
    assert results == [{}] * 12
    assert len(sink.messages) == 13
    assert await mask.counters() == counts(forwarded=1, replied=12)


@pytest.mark.parametrize(
    "author",
    [
        "(" * 3000 + ")" * 3000 + " {owner}",  # the address parser recursed past its limit
        '"' * 20_000 + " {owner}",  # and was quadratic here, on the event loop
    ],
)
async def test_hostile_from_with_the_owners_envelope_is_refused(
    relay: int, sink: Sink, masks: Masks, author: str
) -> None:
    # Anyone can write the owner's address as MAIL FROM; the From header is then all
    # that is parsed, and an unreadable one is a refusal, not a 451 or a stalled server.
    mask = await masks.make()
    alias, _ = await _alias(relay, sink, mask)
    value = author.format(owner=mask.owner)
    folded = "\r\n ".join(value[i : i + 900] for i in range(0, len(value), 900))
    data = _reply(mask.owner, alias).replace(
        f"From: Owner Person <{mask.owner}>".encode(), f"From: {folded}".encode()
    )
    code, text = await _refused_at_data(relay, mask.owner, alias, data)
    assert (code, text[:5]) == (550, "5.7.1")
    assert len(sink.messages) == 1


@pytest.mark.parametrize(
    "author",
    [
        # The email package raises AttributeError on these; the answer must still be 550.
        'x:@:/f;\\"d/ c',
        "x.: /h.i\\@<>.m>n=?utf-8?q?a?=asmtp\\",
        "=?utf-8?q?{owner_encoded}?=",
        "{owner}, {owner}",
        "group: {owner};, mallory@example.net",
        # Longer than a line may be: not parsed, since the parser is quadratic on some.
        "{long} <{owner}>",
    ],
)
async def test_unreadable_or_doubtful_from_is_refused(
    relay: int, sink: Sink, masks: Masks, author: str
) -> None:
    mask = await masks.make()
    alias, _ = await _alias(relay, sink, mask)
    value = author.format(
        owner=mask.owner,
        owner_encoded=mask.owner.replace("@", "=40"),
        long=("name " * 14 + "\r\n ") * 15,
    )
    await _refused_for_from(relay, mask, alias, value)
    assert len(sink.messages) == 1
    assert await mask.counters() == counts(forwarded=1)


async def test_reply_that_cannot_be_scrubbed_is_refused_over_smtp(
    relay: int, sink: Sink, masks: Masks
) -> None:
    mask = await masks.make()
    alias, _ = await _alias(relay, sink, mask)
    card = base64.encodebytes(f"BEGIN:VCARD\r\nEMAIL:{mask.owner}\r\nEND:VCARD\r\n".encode())
    data = (
        (
            f"From: {mask.owner}\r\nTo: {alias}\r\nSubject: my card\r\nMIME-Version: 1.0\r\n"
            "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
            "Content-Type: text/plain\r\n\r\nattached\r\n--b\r\n"
            "Content-Type: application/octet-stream; name=card.vcf\r\n"
            "Content-Transfer-Encoding: base64\r\n\r\n"
        ).encode()
        + card.replace(b"\n", b"\r\n")
        + b"--b--\r\n"
    )
    code, text = await _refused_at_data(relay, mask.owner, alias, data)
    assert (code, text[:5]) == (550, "5.6.0")
    assert len(sink.messages) == 1
    assert await mask.counters() == counts(forwarded=1)


@pytest.mark.parametrize("reply_to", ["r.{token}@relay.test", "{relay}", "{relay_upper}"])
async def test_reply_to_our_own_address_is_refused_not_looped(
    relay: int, sink: Sink, masks: Masks, reply_to: str
) -> None:
    """A sender whose Reply-To is a reverse alias, or the relay address itself: the reply
    could only come back to maskmail, so it is refused with a reason, and nothing is sent."""
    mask = await masks.make()
    target = reply_to.format(token="a" * 24, relay=mask.address, relay_upper=mask.address.upper())
    incoming = message(to=mask.address, extra=f"Reply-To: {target}\r\n")
    assert await send_async(relay, OUTSIDE, [mask.address], incoming) == {}
    alias = str(message_from_bytes(sink.messages[-1].data, policy=policy.default)["Reply-To"])
    code, text = await _refused_at_rcpt(relay, mask.owner, alias, _reply(mask.owner, alias))
    assert (code, text[:5]) == (550, "5.7.1")
    assert "loop" in text
    assert len(sink.messages) == 1
    assert await mask.counters() == counts(forwarded=1)


async def test_alias_of_a_deleted_address_is_gone(relay: int, sink: Sink, masks: Masks) -> None:
    mask = await masks.make()
    alias, _ = await _alias(relay, sink, mask)
    response = await mask.api.delete(f"/v3/relay/addresses/{mask.address_id}", headers=mask.headers)
    assert response.status_code == 204
    code, text = await _refused_at_rcpt(relay, mask.owner, alias, _reply(mask.owner, alias))
    assert (code, text[:5]) == (550, "5.1.1")
    assert len(sink.messages) == 1
