"""Every header field occurrence in every part, and every disguise of the address:
rewritten, or the reply refused (``rewrite_reply`` on its own; over SMTP in
``test_reply_leaks.py``)."""

from __future__ import annotations

import base64
import time
from email import message_from_bytes, policy
from email.message import EmailMessage

import pytest

from maskmail.core.errors import Unrewritable
from maskmail.mail.reply_rewrite import rewrite_reply
from tests.mail.leaks import visible
from tests.mail.test_reply_rewrite import OWNER, RELAY, REPLY

_HEAD = "From: alice@example.com\r\nSubject: s\r\nMIME-Version: 1.0\r\n"


def _parsed(data: bytes) -> EmailMessage:
    parsed = message_from_bytes(data, policy=policy.default)
    assert isinstance(parsed, EmailMessage)
    return parsed


def _related(content_id: str, link: str) -> str:
    return (
        _HEAD + "Content-Type: multipart/related; boundary=b\r\n\r\n--b\r\n"
        f'Content-Type: text/html\r\n\r\n<img src="cid:{link}">\r\n--b\r\n'
        f"Content-Type: image/png\r\nContent-ID: {content_id}\r\n"
        "Content-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=\r\n--b--\r\n"
    )


def test_every_occurrence_of_an_id_field_is_rewritten() -> None:
    raw = (
        f"{_HEAD}Message-ID: <first@example.org>\r\nMessage-ID: <2.alice@example.com>\r\n"
        "References: <a@example.org>\r\nReferences: <b@example.org>\r\n <x.ALICE@example.com>\r\n"
        "In-Reply-To: <a@example.org>\r\nIn-Reply-To: <y.alice@example.com>\r\n\r\nhi\r\n"
    )
    out = rewrite_reply(raw.encode(), REPLY)
    sent = _parsed(out)
    first, second = (str(v) for v in sent.get_all("message-id") or [])
    assert first == "<first@example.org>"
    assert second.endswith("@relay.test>") and "alice" not in second
    refs = [str(v).split() for v in sent.get_all("references") or []]
    assert refs[0] == ["<a@example.org>"]
    assert refs[1][0] == "<b@example.org>" and refs[1][1].endswith("@relay.test>")
    assert [str(v) for v in sent.get_all("in-reply-to") or []][:1] == ["<a@example.org>"]
    assert b"alice" not in out.lower()


def test_content_id_naming_the_owner_is_masked_and_its_link_follows() -> None:
    out = rewrite_reply(
        _related("<part1.alice@example.com>", "part1.alice@example.com").encode(), REPLY
    )
    assert b"alice" not in out.lower()
    html_part, image = [p for p in _parsed(out).walk() if not p.is_multipart()]
    new_id = str(image["Content-ID"])
    assert new_id.endswith("@relay.test>")
    assert f'src="cid:{new_id[1:-1]}"' in html_part.get_content()


def test_content_id_at_the_owners_domain_is_masked() -> None:
    """Thunderbird names a part after the sender's domain: half of the address."""
    out = rewrite_reply(
        _related("<part1.Bx3uN0aI@example.com>", "part1.Bx3uN0aI@example.com").encode(), REPLY
    )
    assert b"example.com" not in out.split(b"\r\n\r\n", 1)[1].lower()


@pytest.mark.parametrize(
    "fields",
    [
        "Content-Description: card of alice@example.com",
        "Content-Description: =?utf-8?q?card_of_ali?= =?utf-8?q?ce=40example.com?=",
        "Content-Disposition: inline\r\n"
        'Content-Disposition: attachment; filename="alice@example.com.vcf"',
        'Content-Type: text/plain\r\nContent-Type: text/plain; name="x.alice@example.com"',
        "Content-Type: text/plain; x-owner*=utf-8''%61lice%40example.com",
        "Comments: a\r\nComments: alice@example.com",
    ],
)
def test_every_field_of_a_nested_part_is_rewritten_or_refused(fields: str) -> None:
    raw = (
        _HEAD + "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
        "Content-Type: text/plain\r\n\r\nhi\r\n--b\r\n"
        f"{fields}\r\n\r\nattached\r\n--b--\r\n"
    )
    try:
        out = rewrite_reply(raw.encode(), REPLY)
    except Unrewritable:
        return
    assert not visible(out, OWNER), out.decode()


def _utf8_text(body: str, subtype: str = "plain") -> str:
    encoded = base64.encodebytes(body.encode()).decode()
    return (
        f"{_HEAD}Content-Type: text/{subtype}; charset=utf-8\r\n"
        f"Content-Transfer-Encoding: base64\r\n\r\n{encoded}"
    )


@pytest.mark.parametrize(
    "raw",
    [
        _HEAD + 'Content-Type: text/plain\r\n\r\nwrite to "alice"@example.com\r\n',
        _HEAD + 'Content-Type: text/plain\r\n\r\nwrite to "al\\ice"@Example.COM\r\n',
        *(_utf8_text(f"write to ali{c}ce@example.com") for c in "\u200b\u200c\u200d\u2060\ufeff"),
        _utf8_text("write to alice@exam\u00adple.com"),
        _HEAD + "Content-Type: text/html\r\n\r\nali&shy;ce@example.com\r\n",
        _HEAD + "Content-Type: text/html\r\n\r\nalice&#8203;@example.com\r\n",
        _HEAD + "Content-Type: text/html\r\n\r\nalice<!-- x -->@example.com\r\n",
        _HEAD + "Content-Type: text/html\r\n\r\nalice<!-- <b> -->@<b>example</b>.com\r\n",
        _utf8_text("write to alice\uff20example\uff0ecom"),
        _utf8_text("write to ALICE@EXAMPLE.COM"),
        _HEAD + "Content-Type: text/plain\r\n\r\nwrite to alice @ example.com\r\n",
        _HEAD + "Content-Type: text/plain\r\n\r\nwrite to alice(me)@example.com\r\n",
        # A header split by folding, or across encoded words, however they sit.
        _HEAD.replace("Subject: s", "Subject: write alice@\r\n example.com") + "\r\nhi\r\n",
        _HEAD.replace("Subject: s", "Subject: =?utf-8?q?ali?=\r\n =?utf-8?q?ce@example.com?=")
        + "\r\nhi\r\n",
        _HEAD.replace("Subject: s", "Subject: ali=?utf-8?q?ce=40exa?=mple.com") + "\r\nhi\r\n",
        # A base64 body that does not decode, shown as written.
        _HEAD + "Content-Transfer-Encoding: base64\r\n\r\nali\u200bce@example.com\r\n",
        # Raw UTF-8 in a field the id parser stops short of.
        _HEAD + "Message-ID: <x@example.org> by ali\u200bce@\r\n example.com\r\n\r\nhi\r\n",
        _HEAD.replace("Subject: s", "Subject: =?utf-8?b?YWxpY2VAZXhh?= =?utf-8?b?bXBsZS5jb20=?=")
        + "\r\nhi\r\n",
    ],
)
def test_every_disguise_is_scrubbed_or_refused(raw: str) -> None:
    try:
        out = rewrite_reply(raw.encode(), REPLY)
    except Unrewritable:
        return
    assert not visible(out, OWNER), out.decode()


@pytest.mark.parametrize(
    "text",
    [
        "write to malice@example.com",
        "write to alice@example.community",
        "the order id is <x.alice@example.com.evil.test>",
    ],
)
def test_other_addresses_are_not_refused(text: str) -> None:
    out = rewrite_reply(f"{_HEAD}Content-Type: text/plain\r\n\r\n{text}\r\n".encode(), REPLY)
    assert text in _parsed(out).get_content()


@pytest.mark.slow
@pytest.mark.parametrize("nested", [False, True])
def test_thousands_of_distinct_fields_take_linear_time(nested: bool) -> None:
    """Deleting fields name by name was quadratic: 20,000 names took over a minute."""
    many = "".join(f"X-Field-{i}: value {i}\r\n" for i in range(20_000))
    if nested:
        raw = (
            f"{_HEAD}Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n{many}"
            "Comments: alice@example.com\r\n\r\nhi\r\n--b--\r\n"
        )
    else:
        raw = f"{_HEAD}{many}Comments: alice@example.com\r\n\r\nhi\r\n"
    started = time.monotonic()
    out = rewrite_reply(raw.encode(), REPLY)
    assert time.monotonic() - started < 10
    assert not visible(out, OWNER)
    sent = _parsed(out)
    part = next(p for p in sent.walk() if not p.is_multipart())
    assert str(part["Comments"] if nested else sent["Comments"]) == RELAY
    assert (part["X-Field-19999"] is not None) is nested
