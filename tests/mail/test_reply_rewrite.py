"""rewrite_reply: the owner's address out of everything, or the reply is refused."""

from __future__ import annotations

import base64
import dataclasses
from datetime import UTC, datetime
from email import message_from_bytes, policy
from email.message import EmailMessage

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maskmail.core.errors import Unrewritable
from maskmail.mail.reply_rewrite import Reply, Scrubber, rewrite_reply

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
    scrub = Scrubber(OWNER, RELAY)
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
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_pieces | st.text(max_size=20), max_size=30))
def test_any_input_is_scrubbed_or_refused(pieces: list[str]) -> None:
    raw = "".join(pieces).encode("utf-8", "surrogateescape")
    try:
        out = rewrite_reply(raw, REPLY)
    except Unrewritable:
        return
    assert not Scrubber(OWNER, RELAY).found_in(out)
