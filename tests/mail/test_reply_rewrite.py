"""rewrite_reply: the owner's address out of everything, or the reply is refused."""

from __future__ import annotations

import base64
import dataclasses
import html
import re
import unicodedata
from datetime import UTC, datetime
from email import message_from_bytes, policy
from email.message import EmailMessage
from urllib.parse import unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maskmail.core.errors import Unrewritable
from maskmail.mail.reply_rewrite import Reply, Scrubber, rewrite_reply
from tests.mail.leaks import visible
from tests.profiles import examples

OWNER = "alice@example.com"
RELAY = "k3x9q2mz@relay.test"
REPLY = Reply(
    owner_mailbox=OWNER,
    relay_address=RELAY,
    outside="shop@example.org",
    display_name="",
    domain="relay.test",
    when=datetime(2026, 11, 22, tzinfo=UTC),
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("write to alice@example.com", f"write to {RELAY}"),
        ("<ALICE@Example.COM>", f"<{RELAY}>"),
        ("mailto:alice@example.com?subject=x", f"mailto:{RELAY}?subject=x"),
        ("alice&#64;example.com", "k3x9q2mz&#64;relay.test"),
        ("alice&#X40;example.com", "k3x9q2mz&#X40;relay.test"),
        ("u=alice%40example.com&x", "u=k3x9q2mz%40relay.test&x"),
        ("alice@example.com.", f"{RELAY}."),
        # Other mailboxes that merely contain the owner's stay as they are.
        ("malice@example.com", "malice@example.com"),
        ("al.alice@example.com", "al.alice@example.com"),
        ("alice@example.com.evil.test", "alice@example.com.evil.test"),
        ("alice@example.community", "alice@example.community"),
    ],
)
def test_scrubber(text: str, expected: str) -> None:
    scrub = Scrubber((OWNER,), RELAY)
    assert scrub.text(text) == expected
    assert scrub.data(text.encode()) == expected.encode()


def _parsed(data: bytes) -> EmailMessage:
    parsed = message_from_bytes(data, policy=policy.default)
    assert isinstance(parsed, EmailMessage)
    return parsed


def test_encoded_subject_and_nested_message_are_scrubbed() -> None:
    inner = EmailMessage()
    inner["From"] = f"Alice <{OWNER}>"
    inner["Subject"] = "the original"
    inner.set_content(f"sent by {OWNER}\n")
    outer = EmailMessage()
    outer["From"] = OWNER
    outer["Subject"] = f"Grüße von {OWNER}"  # written as an RFC 2047 encoded word
    outer.set_content("see attached\n")
    outer.add_attachment(inner)
    outer.add_attachment(
        f'{{"contact": "{OWNER}"}}'.encode(), maintype="application", subtype="json", cte="7bit"
    )
    outer.epilogue = f"end of {OWNER}\n"
    raw = outer.as_bytes(policy=policy.SMTP)
    assert b"=?utf-8?" in raw
    out = rewrite_reply(raw, REPLY)
    assert OWNER.encode() not in out.lower()
    # From, Subject, the nested From and text, the JSON, the epilogue.
    assert out.count(RELAY.encode()) == 6
    sent = _parsed(out)
    assert str(sent["Subject"]) == f"Grüße von {RELAY}"
    nested = [p for p in sent.walk() if p.get_content_type() == "message/rfc822"]
    assert len(nested) == 1
    assert RELAY in out.decode()


def test_binary_attachment_is_left_as_it_came() -> None:
    blob = b"\x00\x01PDF" + OWNER.encode() + b"\xff" * 64
    message = EmailMessage()
    message["From"] = OWNER
    message.set_content("a file\n")
    message.add_attachment(blob, maintype="application", subtype="pdf", filename="a.pdf")
    sent = _parsed(rewrite_reply(message.as_bytes(policy=policy.SMTP), REPLY))
    [attachment] = list(sent.iter_attachments())
    assert attachment.get_content() == blob


def test_undecodable_wide_text_is_refused() -> None:
    raw = (
        f"From: {OWNER}\r\nContent-Type: text/plain; charset=utf-16\r\n"
        "Content-Transfer-Encoding: base64\r\n\r\n"
    ).encode() + base64.encodebytes(b"\xff\xfea\x00b")
    with pytest.raises(Unrewritable):
        rewrite_reply(raw, REPLY)


def test_wide_text_is_scrubbed() -> None:
    text = f"from {OWNER}\n".encode("utf-16")
    raw = (
        f"From: {OWNER}\r\nContent-Type: text/plain; charset=utf-16\r\n"
        "Content-Transfer-Encoding: base64\r\n\r\n"
    ).encode() + base64.encodebytes(text)
    sent = _parsed(rewrite_reply(raw, REPLY))
    assert sent.get_content() == f"from {RELAY}\n"


def test_an_encoding_that_cannot_be_written_back_is_refused() -> None:
    raw = (
        f"From: {OWNER}\r\nContent-Type: text/plain\r\n"
        "Content-Transfer-Encoding: x-uuencode\r\n\r\n"
        f"begin 644 a.txt\r\n{OWNER}\r\nend\r\n"
    ).encode()
    with pytest.raises(Unrewritable):
        rewrite_reply(raw, REPLY)


def test_display_name_is_scrubbed_too() -> None:
    raw = f"From: {OWNER}\r\nSubject: x\r\n\r\nhi\r\n".encode()
    shown = rewrite_reply(
        raw,
        dataclasses.replace(REPLY, display_name=OWNER),
    )
    assert OWNER.encode() not in shown.lower()
    assert _parsed(shown)["From"] == f'"{RELAY}" <{RELAY}>'


@pytest.mark.slow
def test_deep_nesting_is_refused_not_crashed() -> None:
    depth = 2000
    head = "".join(
        f'Content-Type: multipart/mixed; boundary="b{i}"\r\n\r\n--b{i}\r\n' for i in range(depth)
    )
    raw = f"From: {OWNER}\r\n{head}Content-Type: text/plain\r\n\r\n{OWNER}\r\n".encode()
    try:
        out = rewrite_reply(raw, REPLY)
    except Unrewritable:
        return
    assert OWNER.encode() not in out.lower()


_pieces = st.sampled_from(
    [
        f"From: {OWNER}\r\n",
        f"Subject: {OWNER.upper()}\r\n",
        "Content-Type: multipart/alternative; boundary=zz\r\n",
        "Content-Type: text/html; charset=utf-16\r\n",
        "Content-Transfer-Encoding: base64\r\n",
        "Content-Transfer-Encoding: quoted-printable\r\n",
        "\r\n",
        "--zz\r\n",
        "--zz--\r\n",
        f"{OWNER}=\r\n",
        "alice=40example.com\r\n",
        "YWxpY2VAZXhhbXBsZS5jb20=\r\n",
        "=?utf-8?b?YWxpY2VAZXhhbXBsZS5jb20=?=\r\n",
        "\xff\xfe\x00",
        "&#64;",
        # Repeated and nested fields, folds, encoded words splitting the address.
        "Message-ID: <1.alice@example.com>\r\n",
        "References: <a@example.org>\r\n <b.alice@example.com>\r\n",
        "Content-ID: <part1.alice@example.com>\r\n",
        "Content-Description: alice@\r\n example.com\r\n",
        "Subject: =?utf-8?q?ali?=\r\n =?utf-8?q?ce@example.com?=\r\n",
        '"alice"@example.com',
        "ali\u200bce@example.com",
        "alice&shy;@example.com",
    ]
)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(_pieces | st.text(max_size=20), max_size=30))
def test_any_input_is_scrubbed_or_refused(pieces: list[str]) -> None:
    raw = "".join(pieces).encode("utf-8", "surrogateescape")
    try:
        out = rewrite_reply(raw, REPLY)
    except Unrewritable:
        return
    assert not Scrubber((OWNER,), RELAY).found_in(out)
    assert not visible(out, OWNER), out


def _leaks(out: bytes) -> bool:
    """The owner's mailbox anywhere a reader could see it, however it was written."""
    views = [out.decode("utf-8", "replace")]
    for part in _parsed(out).walk():
        views.extend(str(value) for value in part.values())
        views.extend(str(v) for _, v in part.get_params(failobj=[], header="content-type"))
        views.extend(str(v) for _, v in part.get_params(failobj=[], header="content-disposition"))
        views.append(str(part.get_filename("")))
        data = part.get_payload(decode=True)
        if isinstance(data, bytes):
            views.append(data.decode(part.get_content_charset() or "latin-1", "replace"))
        if part.is_multipart() and part.get("content-transfer-encoding") == "base64":
            body = part.as_bytes().partition(b"\n\n")[2]
            views.append(base64.b64decode(b"".join(body.split()[:-1]) + b"==").decode("latin-1"))
    text = "\n".join(views)
    text += "\n" + re.sub(r"<[^>]*>", "", text)
    text = unquote(unquote(html.unescape(text)))
    text = unicodedata.normalize("NFKC", text).replace(" \r\n", "").replace(" \n", "")
    return OWNER in text.lower()


_HEAD = f"From: {OWNER}\r\nSubject: s\r\nMIME-Version: 1.0\r\n"
_INNER = f"From: {OWNER}\r\nSubject: inner\r\n\r\nby {OWNER}\r\n".encode()


def _b64(text: str, charset: str = "utf-8") -> str:
    return base64.encodebytes(text.encode(charset)).decode()


@pytest.mark.parametrize(
    "raw",
    [
        # Message ids the owner's client made from their address.
        _HEAD + "Message-ID: <1700000000.alice@example.com>\r\n\r\nhi\r\n",
        _HEAD + "In-Reply-To: <x-alice@example.com>\r\nReferences: <a.alice@example.com>\r\n\r\nhi",
        # MIME parameters, RFC 2231 encoded and continued.
        _HEAD + "Content-Type: text/plain\r\nContent-Disposition: attachment; "
        "filename*=utf-8''%61lice%40example.com.vcf\r\n\r\nhi\r\n",
        _HEAD + "Content-Type: text/plain\r\nContent-Disposition: attachment; "
        'filename*0="alice@exa"; filename*1="mple.com.txt"\r\n\r\nhi\r\n',
        # HTML character references for any character, zero-padded, in either case.
        _HEAD + "Content-Type: text/html\r\n\r\n&#x61;lice&#x40;example.com\r\n",
        _HEAD + "Content-Type: text/html\r\n\r\nalice&#0064;example.com\r\n",
        _HEAD + "Content-Type: text/html\r\n\r\nALICE&#X0040;EXAMPLE&#46;COM\r\n",
        _HEAD + "Content-Type: text/html\r\n\r\nalice&commat;example&period;com\r\n",
        _HEAD + "Content-Type: text/html\r\n\r\n<a href='?to=%61lice%40example.com'>x</a>\r\n",
        # Split by markup, or by a flowed line break that deletes its space.
        _HEAD + "Content-Type: text/html\r\n\r\nalice<span></span>@example.com\r\n",
        _HEAD
        + "Content-Type: text/plain; format=flowed; delsp=yes\r\n\r\nalice@ \r\nexample.com\r\n",
        # Charsets in which ASCII is not ASCII.
        _HEAD + "Content-Type: text/plain; charset=utf-7\r\n\r\nalice+AEA-example.com\r\n",
        _HEAD
        + "Content-Type: text/plain; charset=cp500\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        + _b64(OWNER, "cp500"),
        # Full-width forms a reader's eye takes for the address.
        _HEAD
        + "Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        + _b64("".join(chr(ord(c) + 0xFEE0) for c in OWNER)),
        # Attachments the recipient's client opens as text: a calendar invitation, a card.
        _HEAD + "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
        "Content-Type: application/ics\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        + _b64(f"ORGANIZER:mailto:{OWNER}\r\n")
        + "--b--\r\n",
        _HEAD + "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
        "Content-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        + _b64(f"EMAIL:{OWNER}\r\n")
        + "--b--\r\n",
        # A nested message in an encoding a composite part may not have (RFC 2046 5.2.1).
        _HEAD + "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
        "Content-Type: message/rfc822\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        + base64.encodebytes(_INNER).decode()
        + "--b--\r\n",
    ],
)
def test_every_written_form_is_scrubbed_or_refused(raw: str) -> None:
    try:
        out = rewrite_reply(raw.encode(), REPLY)
    except Unrewritable:
        return
    assert not _leaks(out), out.decode()


def test_message_ids_made_from_the_owners_address_are_replaced_consistently() -> None:
    mine = "<1700000000.alice@example.com>"
    first = _parsed(rewrite_reply(f"{_HEAD}Message-ID: {mine}\r\n\r\nhi\r\n".encode(), REPLY))
    later = _parsed(
        rewrite_reply(
            f"{_HEAD}In-Reply-To: {mine}\r\nReferences: <x@example.org> {mine}\r\n\r\nhi".encode(),
            REPLY,
        )
    )
    replaced = str(first["Message-ID"])
    assert replaced.endswith("@relay.test>") and "alice" not in replaced
    # The same id maps to the same replacement, so the outside side's threads hold.
    assert str(later["In-Reply-To"]) == replaced
    assert str(later["References"]).split() == ["<x@example.org>", replaced]


def test_attachment_named_after_the_owner_is_renamed() -> None:
    raw = (
        _HEAD + "Content-Type: text/vcard; name*=utf-8''alice%40example.com.vcf\r\n"
        "Content-Disposition: attachment; filename*=utf-8''Alice%40Example.com.vcf\r\n\r\n"
        "BEGIN:VCARD\r\nEND:VCARD\r\n"
    )
    sent = _parsed(rewrite_reply(raw.encode(), REPLY))
    assert sent.get_filename() == f"{RELAY}.vcf"
    assert sent.get_param("name") == f"{RELAY}.vcf"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("&#x61;lice&#x40;example.com", "k3x9q2mz&#x40;relay.test"),
        ("alice&#0064;EXAMPLE.com", "k3x9q2mz&#0064;relay.test"),
        ("%61lice%40example%2Ecom", "k3x9q2mz%40relay.test"),
        ("alice&commat;example&period;com", "k3x9q2mz&commat;relay.test"),
    ],
)
def test_scrubber_reads_character_references(text: str, expected: str) -> None:
    assert Scrubber((OWNER,), RELAY).text(text) == expected


def test_non_ascii_owner_in_a_legacy_charset() -> None:
    owner = "jösé@example.com"
    raw = (
        f"From: x@example.org\r\nSubject: s\r\nContent-Type: text/plain; charset=latin-1\r\n"
        "Content-Transfer-Encoding: 8bit\r\n\r\n"
        f"written by {owner}\r\n"
    ).encode("latin-1")
    try:
        out = rewrite_reply(raw, dataclasses.replace(REPLY, owner_mailbox=owner))
    except Unrewritable:
        return
    assert owner not in _parsed(out).get_content()


def test_utf7_text_is_rewritten_not_mangled() -> None:
    raw = f"{_HEAD}Content-Type: text/plain; charset=utf-7\r\n\r\nhi alice+AEA-example.com\r\n"
    sent = _parsed(rewrite_reply(raw.encode(), REPLY))
    assert sent.get_content().strip() == f"hi {RELAY}"


@pytest.mark.parametrize(
    ("owner", "written"),
    [
        ("alice@bücher.example", "alice@xn--bcher-kva.example"),
        ("alice@xn--bcher-kva.example", "Alice@BÜCHER.example"),
        ("alice@bücher.example", "alice@BÜCHER.EXAMPLE"),
    ],
)
def test_owner_domain_in_either_idn_form(owner: str, written: str) -> None:
    raw = (
        f"From: {owner}\r\nSubject: s\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Transfer-Encoding: 8bit\r\n\r\nwrite to {written} or {owner}\r\n"
    ).encode()
    out = rewrite_reply(raw, dataclasses.replace(REPLY, owner_mailbox=owner))
    assert _parsed(out).get_content().replace("\r\n", "\n") == f"write to {RELAY} or {RELAY}\n"


@pytest.mark.parametrize(
    ("msg_id", "masked"),
    [
        # A client such as Thunderbird names the owner's domain: half of their address.
        ("<4f1c2a9e-77@example.com>", True),
        ("<CAF=x@mail.EXAMPLE.com>", True),
        ("<original@example.org>", False),
        ("<x@notexample.com>", False),
    ],
)
def test_message_ids_at_the_owners_domain_are_replaced(msg_id: str, masked: bool) -> None:
    raw = f"{_HEAD}Message-ID: {msg_id}\r\nReferences: <a@example.org> {msg_id}\r\n\r\nhi\r\n"
    sent = _parsed(rewrite_reply(raw.encode(), REPLY))
    shown = str(sent["Message-ID"])
    assert (shown != msg_id) is masked
    # In References it may be the outside sender's own id, on the owner's provider.
    assert str(sent["References"]).split() == ["<a@example.org>", msg_id]
    if masked:
        assert shown.endswith("@relay.test>") and "example.com" not in shown.lower()
