"""The rewrite on its own: splitting, the author, the allowlist, and the untouched body."""

from __future__ import annotations

from datetime import UTC, datetime
from email import message_from_bytes, policy

import pytest

from maskmail.mail.rewrite import (
    LOOP_HEADER,
    Forward,
    Incoming,
    has_loop_marker,
    header_fields,
    origin,
    parse_headers,
    read,
    received_header,
    rewrite,
    sender_display,
    split_message,
)


@pytest.mark.parametrize(
    ("raw", "headers", "body"),
    [
        (b"A: 1\r\nB: 2\r\n\r\nbody\r\n\r\n", b"A: 1\r\nB: 2\r\n", b"body\r\n\r\n"),
        (b"A: 1\nB: 2\n\nbody\n", b"A: 1\nB: 2\n", b"body\n"),
        (b"A: 1\r\n", b"A: 1\r\n", b""),
        (b"\r\nonly body\r\n", b"", b"only body\r\n"),
        (b"A: 1\r\n\r\n", b"A: 1\r\n", b""),
    ],
)
def test_split_message(raw: bytes, headers: bytes, body: bytes) -> None:
    assert split_message(raw) == (headers, body)


def author_of(block: bytes, envelope: str = "env@example.org") -> tuple[str, str, str]:
    found = origin(parse_headers(block), envelope)
    return found.display_name, found.address, found.reply_to


def test_origin_reads_from_and_reply_to() -> None:
    block = b"From: =?utf-8?q?J=C3=BCrgen?= <j@example.com>\r\nReply-To: list@example.net\r\n"
    assert author_of(block) == ("Jürgen", "j@example.com", "list@example.net")
    assert author_of(b"From: j@example.com\r\n") == ("", "j@example.com", "j@example.com")


@pytest.mark.parametrize(
    "block", [b"", b"From: <<<broken\r\n", b"From: undisclosed-recipients:;\r\n"]
)
def test_origin_falls_back_to_the_envelope(block: bytes) -> None:
    assert author_of(block)[1:] == ("env@example.org", "env@example.org")


@pytest.mark.parametrize(
    "value",
    [
        b'"' * 5000,  # quadratic in the standard library's parser
        b"(" * 600 + b")" * 600 + b" a@example.com",  # one recursion per nested comment
        b", ".join(b"a%d@example.com" % i for i in range(200)),
    ],
)
def test_oversized_or_deep_author_headers_fall_back(value: bytes) -> None:
    folded = b"\r\n ".join(value[i : i + 500] for i in range(0, len(value), 500))
    block = b"From: " + folded + b"\r\nReply-To: " + folded + b"\r\n"
    assert author_of(block) == ("", "env@example.org", "env@example.org")


def test_origin_skips_undecodable_addresses() -> None:
    block = "From: Zoë <zo\udcffe@example.com>\r\n".encode("utf-8", "surrogateescape")
    assert author_of(block)[1] == "env@example.org"


def test_sender_display_is_one_bounded_line() -> None:
    found = origin(parse_headers(b'From: "A\r\n B" <a@example.com>\r\n'), "")
    assert "\n" not in sender_display(found)
    long = origin(parse_headers(b"From: " + b"x" * 500 + b" <a@example.com>\r\n"), "")
    assert len(sender_display(long)) <= 200


def test_received_header_cleans_the_helo_name() -> None:
    line = received_header(
        helo="evil\r\nX-Injected: 1 (x)",
        peer_ip="192.0.2.1",
        hostname="relay.test",
        relay_address="abc@relay.test",
        when=datetime(2026, 11, 22, tzinfo=UTC),
    )
    # No line break survives, so nothing can start a header of its own.
    assert line.startswith("Received: from evilX-Injected:1x ([192.0.2.1])")
    assert line.count("\r\n") == 3 and line.endswith("\r\n")


def test_loop_marker_must_name_our_domain() -> None:
    fields = header_fields(parse_headers(f"{LOOP_HEADER}: Relay.Test\r\n".encode()))
    assert has_loop_marker(fields, "relay.test")
    assert not has_loop_marker(fields, "other.test")


def test_read_gives_the_parts_once() -> None:
    raw = f"From: Bob <bob@example.org>\r\n{LOOP_HEADER}: relay.test\r\n\r\nhi\r\n".encode()
    found = read(raw, "env@example.org", "relay.test")
    assert (found.raw, found.body) == (raw, b"hi\r\n")
    assert found.fields == [("From", "Bob <bob@example.org>"), (LOOP_HEADER, "relay.test")]
    assert (found.origin.address, found.origin.reply_to) == ("bob@example.org", "bob@example.org")
    assert found.looped
    assert not read(raw, "env@example.org", "other.test").looped


def forward(**changes: object) -> Forward:
    values: dict[str, object] = {
        "relay_address": "abc@relay.test",
        "reverse_alias": "r.x@relay.test",
        "helo": "x",
        "peer_ip": "127.0.0.1",
        "hostname": "mx.relay.test",
        "when": datetime(2026, 11, 22, tzinfo=UTC),
        "loop_marker": "relay.test",
        "spam": False,
        "keep_verdicts": False,
        **changes,
    }
    return Forward(**values)  # type: ignore[arg-type]


RAW = (
    b"Received: from hop\r\nFrom: Bob <bob@example.org>\r\nSender: x@example.org\r\n"
    b"Subject: =?utf-8?q?Gr=C3=BC=C3=9Fe?=\r\nX-Spam-Flag: NO\r\nX-Tracking: 1\r\n"
    b"Content-Type: text/plain;\r\n charset=utf-8\r\n\r\nK\xc3\xb6ln\r\n.\r\n"
)


def rewritten(**changes: object) -> bytes:
    return rewrite(read(RAW, "", "relay.test"), forward(**changes))


def test_rewrite_keeps_only_allowed_headers_and_the_body() -> None:
    out = rewritten()
    assert out.endswith(b"\r\n\r\nK\xc3\xb6ln\r\n.\r\n")
    parsed = message_from_bytes(out, policy=policy.default)
    assert [k for k in parsed] == [
        "Received", "From", "Reply-To", LOOP_HEADER, "Subject", "Content-Type"
    ]  # fmt: skip
    assert parsed["Subject"] == "Grüße"
    assert b"Content-Type: text/plain;\r\n charset=utf-8\r\n" in out  # folding kept as sent
    assert "bob@example.org" in str(parsed["From"])
    assert "from x ([127.0.0.1])" in str(parsed["Received"])
    assert "for <abc@relay.test>" in str(parsed["Received"])


def test_rewrite_verdicts_and_reply_to() -> None:
    trusted = message_from_bytes(rewritten(keep_verdicts=True), policy=policy.default)
    assert trusted.get_all("X-Spam-Flag") == ["NO"]  # the filter's own header, kept
    # Judged spam (say, by rspamd) although the filter said no: the flag says what we did.
    overruled = message_from_bytes(rewritten(keep_verdicts=True, spam=True), policy=policy.default)
    assert overruled.get_all("X-Spam-Flag") == ["YES"]
    marked = message_from_bytes(rewritten(spam=True), policy=policy.default)
    assert marked.get_all("X-Spam-Flag") == ["YES"]
    anonymous = message_from_bytes(rewritten(reverse_alias=None), policy=policy.default)
    assert anonymous["Reply-To"] is None


def test_rewrite_leaves_no_stray_line_break_or_nul_in_headers() -> None:
    raw = b"Subject: a\x00b\r\n c\r\n d\r\n\r\nbody\r\n"
    fields = [("Subject", "a\x00b\r\n c\r d\n\r\n\t\r\nTo: x@example.org")]
    message = Incoming(raw, b"body\r\n", fields, origin(parse_headers(b""), "e@example.org"), False)
    out = rewrite(message, forward())
    assert b"\r\nSubject: a b\r\n c\r\n d\r\n To: x@example.org\r\n\r\nbody\r\n" in out


@pytest.mark.parametrize(
    ("block", "author"),
    [
        (
            b"From: =?utf-8?b?SsO8cmdlbg==?= <j@example.com>\r\n",
            ("J\u00fcrgen", "j@example.com", "j@example.com"),
        ),
        (
            b'From: "J\xc3\xbcrgen\r\n Sender"\r\n <j@example.com>\r\n'
            b"Reply-To:\r\n Team\r\n <list@example.net>,\r\n\tother@example.net\r\n",
            ("J\u00fcrgen Sender", "j@example.com", "list@example.net"),
        ),
        # Only the first From is the author; another one is not even parsed.
        (
            b"From: =?utf-8?q?A?= <a@example.com>\r\nFrom: B <b@example.com>\r\n",
            ("A", "a@example.com", "a@example.com"),
        ),
        (
            b"From: a@example.com\r\nfrom: " + b'"' * 5000 + b"\r\n",
            ("", "a@example.com", "a@example.com"),
        ),
        (
            b"From: " + b'"' * 5000 + b"\r\nFrom: a@example.com\r\n",
            ("", "env@example.org", "env@example.org"),
        ),
        # Bytes that are not UTF-8, raw or in an encoded word, never reach the name.
        (b"From: Zo\xeb <z@example.com>\r\n", ("", "z@example.com", "z@example.com")),
        (
            b"From: =?unknown-8bit?q?Zo=EB?= <z@example.com>\r\n",
            ("", "z@example.com", "z@example.com"),
        ),
        (
            b"From: =?iso-8859-1?q?Zo=EB?= <z@example.com>\r\n",
            ("Zo\u00eb", "z@example.com", "z@example.com"),
        ),
        (
            b"From: =?utf-8?b?broken <z@example.com>\r\n",
            ("=?utf-8?b?broken", "z@example.com", "z@example.com"),
        ),
    ],
)
def test_origin_decodes_like_the_default_policy(block: bytes, author: tuple[str, str, str]) -> None:
    assert author_of(block) == author


@pytest.mark.parametrize(
    "content_type",
    [
        b'text/plain; charset="utf-8',
        b";;;=",
        b"multipart/mixed",
        b"multipart/mixed; boundary=\xff\xfe",
        b'text/plain; name="Zo\xc3\xab\xff"',  # UTF-8 and a byte that is not
        b"text/plain; name*0*=utf-8''%C3; name*1*=%ZZ",
    ],
)
def test_read_keeps_a_malformed_content_type_as_it_came(content_type: bytes) -> None:
    raw = b"From: a@example.com\r\nContent-Type: " + content_type + b"\r\n\r\nbody\r\n"
    found = read(raw, "env@example.org", "relay.test")
    value = content_type.decode("utf-8", "surrogateescape")
    assert found.fields == [("From", "a@example.com"), ("Content-Type", value)]
    assert (found.origin.address, found.body) == ("a@example.com", b"body\r\n")
    assert rewrite(found, forward()).endswith(
        b"\r\nContent-Type: " + content_type + b"\r\n\r\nbody\r\n"
    )


def test_read_never_parses_the_content_type() -> None:
    """The forward carries Content-Type as it came, so reading it is never needed: a value
    the email package's parser cannot take (it recurses once per nested comment) is no
    reason to defer the message."""
    deep = b"text/plain " + b"(" * 3000 + b")" * 3000
    found = read(b"Content-Type: " + deep + b"\r\n\r\nbody\r\n", "env@example.org", "relay.test")
    assert found.fields == [("Content-Type", deep.decode())]
