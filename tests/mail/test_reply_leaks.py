"""The owner's address in a repeated field, a MIME part's field or a disguise, and in
what maskmail adds to a forward: over real SMTP, rewritten or refused, never sent."""

from __future__ import annotations

import base64
import smtplib
from email import message_from_bytes, policy
from email.message import EmailMessage

import dkim
import pytest

from maskmail.mail.dkim import txt_value
from tests.mail.conftest import Mask, Masks, Sink, counts, send_async
from tests.mail.leaks import visible
from tests.pgp_keys import NEEDS_GPG, key_of

pytestmark = pytest.mark.anyio
OUTSIDE = "shop@example.org"


async def _contact(mask: Mask) -> str:
    """A reverse alias the owner writes first through (the write-first path)."""
    response = await mask.api.post(
        f"/v3/relay/addresses/{mask.address_id}/contacts",
        headers=mask.headers,
        json={"email": OUTSIDE},
    )
    assert response.status_code == 200, response.text
    alias: str = response.json()["reverse_alias"]
    return alias


async def _forwarded_alias(relay: int, sink: Sink, mask: Mask) -> str:
    """An outside sender writes to the mask; the Reply-To of the forward the owner got."""
    data = f"From: {OUTSIDE}\r\nTo: {mask.address}\r\nSubject: hi\r\n\r\nhello\r\n".encode()
    assert await send_async(relay, OUTSIDE, [mask.address], data) == {}
    forwarded = message_from_bytes(sink.messages[-1].data, policy=policy.default)
    return str(forwarded["Reply-To"])


def _sent(sink: Sink) -> EmailMessage:
    parsed = message_from_bytes(sink.messages[-1].data, policy=policy.default)
    assert isinstance(parsed, EmailMessage)
    return parsed


async def test_second_message_id_and_references_naming_the_owner(
    relay: int, sink: Sink, masks: Masks
) -> None:
    mask = await masks.make()
    alias = await _forwarded_alias(relay, sink, mask)
    local = mask.owner.partition("@")[0]
    data = (
        f"From: {mask.owner}\r\nTo: {alias}\r\nSubject: re\r\n"
        f"Message-ID: <first@example.net>\r\nMessage-ID: <2.{mask.owner}>\r\n"
        f"References: <a@example.org>\r\nReferences: <b.{mask.owner}>\r\n\r\nthanks\r\n"
    ).encode()
    assert await send_async(relay, mask.owner, [alias], data) == {}
    got = sink.messages[-1]
    assert got.rcpt_tos == [OUTSIDE]
    assert local not in got.data.decode().lower()
    sent = _sent(sink)
    ids = [str(v) for v in sent.get_all("message-id") or []]
    assert ids[0] == "<first@example.net>" and ids[1].endswith("@relay.test>")
    refs = [str(v) for v in sent.get_all("references") or []]
    assert refs[0] == "<a@example.org>" and refs[1].endswith("@relay.test>")
    assert await mask.counters() == counts(forwarded=1, replied=1)


async def test_content_id_of_a_related_part_written_first_through_a_contact(
    relay: int, sink: Sink, masks: Masks
) -> None:
    mask = await masks.make()
    alias = await _contact(mask)
    data = (
        f"From: {mask.owner}\r\nTo: {alias}\r\nSubject: my logo\r\nMIME-Version: 1.0\r\n"
        "Content-Type: multipart/related; boundary=b\r\n\r\n--b\r\n"
        f'Content-Type: text/html\r\n\r\n<img src="cid:part1.{mask.owner}">\r\n--b\r\n'
        f"Content-Type: image/png\r\nContent-ID: <part1.{mask.owner}>\r\n"
        f"Content-Description: logo by {mask.owner}\r\n"
        "Content-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=\r\n--b--\r\n"
    ).encode()
    assert await send_async(relay, mask.owner, [alias], data) == {}
    got = sink.messages[-1]
    assert got.rcpt_tos == [OUTSIDE]
    assert not visible(got.data, mask.owner)
    html, image = [part for part in _sent(sink).walk() if not part.is_multipart()]
    content_id = str(image["Content-ID"])
    assert content_id.endswith("@relay.test>")
    # The inline image still shows: the link follows the new id.
    assert f'src="cid:{content_id[1:-1]}"' in html.get_content()
    assert str(image["Content-Description"]) == f"logo by {mask.address}"
    assert await mask.counters() == counts(replied=1)


def _text(owner: str, text: str, subtype: str = "plain") -> bytes:
    body = base64.encodebytes(text.format(local=owner.partition("@")[0], owner=owner).encode())
    return (
        f"Subject: hi\r\nMIME-Version: 1.0\r\nContent-Type: text/{subtype}; charset=utf-8\r\n"
        "Content-Transfer-Encoding: base64\r\n\r\n"
    ).encode() + body


@pytest.mark.slow
@pytest.mark.parametrize(
    ("text", "subtype"),
    [
        ('write to "{local}"@example.com', "plain"),
        ("write to {local}\u200b@example.com", "plain"),
        ("write to {local}@exam\u2060ple.com", "plain"),
        ("<p>write to {local}&shy;@example.com</p>", "html"),
        ("<p>write to {local}<!-- -->@example.com</p>", "html"),
    ],
)
async def test_a_disguised_address_is_refused(
    relay: int, sink: Sink, masks: Masks, text: str, subtype: str
) -> None:
    mask = await masks.make()
    alias = await _contact(mask)
    data = f"From: {mask.owner}\r\nTo: {alias}\r\n".encode() + _text(mask.owner, text, subtype)
    await _refused_with_5_6_0(relay, sink, mask, alias, data)


async def test_nothing_maskmail_adds_names_the_owner(
    signing_relay: tuple[int, bytes], sink: Sink, masks: Masks
) -> None:
    """The forward's envelope sender (a signed bounce address), its Received line, From,
    Reply-To, loop marker and DKIM signature; the reply's envelope and signature; the
    answer to the outside sender when the owner's provider refuses the forward."""
    port, public = signing_relay
    mask = await masks.make()
    alias = await _forwarded_alias(port, sink, mask)
    forward = sink.messages[-1]
    assert forward.rcpt_tos == [mask.owner]
    assert mask.owner not in forward.mail_from.lower()
    assert not visible(forward.data, mask.owner)
    assert dkim.verify(forward.data, dnsfunc=lambda name, timeout=5: txt_value(public).encode())
    data = f"From: {mask.owner}\r\nTo: {alias}\r\nSubject: re\r\n\r\nthanks\r\n".encode()
    assert await send_async(port, mask.owner, [alias], data) == {}
    reply = sink.messages[-1]
    assert (reply.mail_from, reply.rcpt_tos) == (mask.address, [OUTSIDE])
    assert not visible(reply.data, mask.owner)
    assert mask.owner.partition("@")[0] not in reply.data.decode().lower()
    assert dkim.verify(reply.data, dnsfunc=lambda name, timeout=5: txt_value(public).encode())
    sink.handler.reply = f"550 5.1.1 <{mask.owner}>: mailbox unavailable"
    data = f"From: {OUTSIDE}\r\nTo: {mask.address}\r\nSubject: again\r\n\r\nhi\r\n".encode()
    with pytest.raises(smtplib.SMTPDataError) as caught:
        await send_async(port, OUTSIDE, [mask.address], data)
    assert caught.value.smtp_code == 550
    assert mask.owner.partition("@")[0] not in str(caught.value.smtp_error).lower()


def _reply_with(owner: str, alias: str, parts: str) -> bytes:
    return (
        f"From: {owner}\r\nTo: {alias}\r\nSubject: re\r\nMIME-Version: 1.0\r\n"
        "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
        f"Content-Type: text/plain\r\n\r\nsee attached\r\n{parts}--b--\r\n"
    ).encode()


async def _refused_with_5_6_0(relay: int, sink: Sink, mask: Mask, alias: str, data: bytes) -> None:
    with pytest.raises(smtplib.SMTPDataError) as caught:
        await send_async(relay, mask.owner, [alias], data)
    assert caught.value.smtp_code == 550
    error = caught.value.smtp_error
    assert (error.decode() if isinstance(error, bytes) else error).startswith("5.6.0")
    assert sink.messages == []
    assert await mask.counters() == counts()


async def _sent_without_the_owner(
    relay: int, sink: Sink, mask: Mask, alias: str, parts: str
) -> list[EmailMessage]:
    """The reply sent to the outside sender without the owner's address; its text parts."""
    assert await send_async(relay, mask.owner, [alias], _reply_with(mask.owner, alias, parts)) == {}
    got = sink.messages[-1]
    assert got.rcpt_tos == [OUTSIDE]
    assert not visible(got.data, mask.owner)
    return [p for p in _sent(sink).walk() if p.get_content_maintype() == "text"]


@NEEDS_GPG
@pytest.mark.parametrize("encoding", ["7bit", "base64"])
async def test_the_owners_key_attached_is_refused(
    relay: int, sink: Sink, masks: Masks, encoding: str
) -> None:
    """As Thunderbird attaches the sender's key: its user id names the owner, inside the
    key's packets, which no rewriting can change without breaking the key."""
    mask = await masks.make()
    alias = await _contact(mask)
    key = key_of(f"Owner <{mask.owner}>").replace("\n", "\r\n")
    body = base64.encodebytes(key.encode()).decode() if encoding == "base64" else key
    part = (
        '--b\r\nContent-Type: application/pgp-keys; name="OpenPGP_0x5A.asc"\r\n'
        f"Content-Transfer-Encoding: {encoding}\r\n\r\n{body}\r\n"
    )
    await _refused_with_5_6_0(relay, sink, mask, alias, _reply_with(mask.owner, alias, part))


async def test_folded_calendar_and_card_lines_are_rewritten(
    relay: int, sink: Sink, masks: Masks
) -> None:
    mask = await masks.make()
    alias = await _contact(mask)
    local, _, domain = mask.owner.partition("@")
    head, tail = domain.split(".", 1)
    parts = (
        "--b\r\nContent-Type: text/calendar; method=REQUEST\r\n\r\n"
        "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\n"
        f"ORGANIZER;CN=Owner:mailto:{local}@{head}.\r\n {tail}\r\n"
        "END:VEVENT\r\nEND:VCALENDAR\r\n"
        "--b\r\nContent-Type: text/vcard\r\n\r\n"
        f"BEGIN:VCARD\r\nFN:Owner\r\nEMAIL:{local[:3]}\r\n {local[3:]}@{domain}\r\nEND:VCARD\r\n"
    )
    texts = await _sent_without_the_owner(relay, sink, mask, alias, parts)
    calendar, card = (str(part.get_content()) for part in texts[1:])
    assert f"ORGANIZER;CN=Owner:mailto:{mask.address}\r\n" in calendar
    assert f"EMAIL:{mask.address}\r\n" in card
    assert await mask.counters() == counts(replied=1)


async def test_plus_addressed_forms_are_rewritten(relay: int, sink: Sink, masks: Masks) -> None:
    mask = await masks.make()
    alias = await _contact(mask)
    local, _, domain = mask.owner.partition("@")
    parts = (
        f"--b\r\nContent-Type: text/plain\r\n\r\n"
        f"write to {local}+news@{domain} or {local.upper()}+X@{domain.upper()}\r\n"
        "--b\r\nContent-Type: text/plain\r\n"
        f'Content-Disposition: attachment; filename="{local}+cv@{domain}.txt"\r\n\r\nmy CV\r\n'
    )
    texts = await _sent_without_the_owner(relay, sink, mask, alias, parts)
    assert local not in sink.messages[-1].data.decode().lower()
    assert texts[1].get_content().strip() == f"write to {mask.address} or {mask.address}"
    assert texts[2].get_filename() == f"{mask.address}.txt"
    assert await mask.counters() == counts(replied=1)
