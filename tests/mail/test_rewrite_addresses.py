"""The author's addresses: the plain forms read by the fast path exactly as the email
package's parser reads them, and every other value still handed to that parser."""

from __future__ import annotations

from email import policy
from email.headerregistry import Address

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from maskmail.mail.rewrite import MAX_ADDRESS_HEADER, _address_list, _plain_addresses

Seen = list[tuple[str, str, str, str]]

# Pieces rich in what the address grammar treats specially, and in what sends a value
# to the parser: encoded words, quoting, comments, groups, line breaks, non-ASCII text
# and surrogate-escaped bytes.
_PIECES = [
    "a", "Bob", "Sender 123", "x.y", "o'n", "#1", "example.com", "outside.example",
    "@", "<", ">", ",", ", ", " ", "  ", "\t", ".", "..", '"', '""', '"Doe, J."', "\\",
    "(", ")", "(c)", "[", "]", "[1.2.3.4]", ":", ";", "=?", "?=", "=", "?",
    "=?utf-8?q?J=C3=BCrgen?=", "\r\n ", "\r", "\n", "\x00", "\x7f", "é", "\udcff",
    "a@b", "<a@b>", "~", "-",
]  # fmt: skip
_SPECIALS = '<>@.,:;"\\()[] \t\r\n=?éø\udcff\x00\x7f'

_BLANKS = st.sampled_from(["", " ", "  ", "\t", " \t "])
_ENCODED = st.sampled_from(["=?utf-8?q?J=C3=BCrgen?=", "=?us-ascii?q?A?=", "=?x?b?QQ==?="])
_ATOM = st.sampled_from(["a", "Bob", "x.y", "o'n", "b-1", "#", "~x", "example.com"]) | _ENCODED
_WORD = st.one_of(_ATOM, _ATOM, _ATOM, st.text(alphabet=st.sampled_from("ab1'#.=?-é"), max_size=4))
_AT = st.sampled_from(["@"] * 6 + ["", "@@"])
# Quoted, mostly what a quoted name may hold, now and then what it may not.
_NAME_TEXT = st.text(alphabet=st.sampled_from("ab ,.<>@()\t=?" * 3 + '"\\é\udcff'), max_size=6)


@st.composite
def _mailbox(draw: st.DrawFn) -> str:
    """A mailbox in or near a plain form: each part is often valid, sometimes not."""
    address = draw(_WORD) + draw(_AT) + draw(_WORD)
    name = draw(
        st.one_of(
            st.just(""),
            st.lists(_WORD, min_size=1, max_size=3).map(" ".join),
            _NAME_TEXT.map(lambda text: f'"{text}"'),
        )
    )
    if not name and draw(st.booleans()):
        return draw(_BLANKS) + address + draw(_BLANKS)
    return draw(_BLANKS) + name + draw(_BLANKS) + f"<{address}>" + draw(_BLANKS)


@st.composite
def _near_plain(draw: st.DrawFn) -> str:
    """Plain mailboxes in a list, sometimes with one piece of something else put in."""
    mailboxes = draw(st.lists(_mailbox(), min_size=1, max_size=3))
    value = draw(st.sampled_from([",", ", ", " ,", ", ", ",,"])).join(mailboxes)
    if draw(st.integers(0, 3)) == 0:
        at = draw(st.integers(0, len(value)))
        value = value[:at] + draw(st.sampled_from(_PIECES)) + value[at:]
    return value


values = st.one_of(
    _near_plain(),
    _near_plain(),
    st.lists(st.sampled_from(_PIECES), max_size=12).map("".join),
    st.text(alphabet=st.sampled_from(_SPECIALS) | st.sampled_from("ab1'#"), max_size=24),
    st.text(max_size=16),
)


def seen(found: list[Address]) -> Seen:
    return [(a.display_name, a.username, a.domain, a.addr_spec) for a in found]


def parsed(name: str, value: str) -> Seen:
    """The full path alone: the header registry, with an error read as no address."""
    if len(value) > MAX_ADDRESS_HEADER:
        return []
    try:
        found = list(getattr(policy.default.header_fetch_parse(name, value), "addresses", ()))
    except Exception:
        return []
    return seen([address for address in found if isinstance(address, Address)])


@settings(max_examples=1500)
@given(value=values, name=st.sampled_from(["From", "Reply-To"]))
def test_addresses_are_read_as_the_parser_reads_them(name: str, value: str) -> None:
    event("fast path" if _plain_addresses(value) is not None else "parser")
    assert seen(_address_list(name, value)) == parsed(name, value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Sender 123 <sender7@outside.example>", [("Sender 123", "sender7@outside.example")]),
        ("a@b", [("", "a@b")]),
        ("<a@b>", [("", "a@b")]),
        ('"" <a@b>', [("", "a@b")]),
        ("  Bob   Smith\t<bob.smith@example.com>   ", [("Bob Smith", "bob.smith@example.com")]),
        ('"Smith, Bob" <b@example.com>', [("Smith, Bob", "b@example.com")]),
        ('"Bob J. Smith" <b@example.com>', [("Bob J. Smith", "b@example.com")]),
        ('" padded  name " <b@example.com>', [(" padded  name ", "b@example.com")]),
        ("O'Neil <o'neil@example.com>", [("O'Neil", "o'neil@example.com")]),
        ("a@b, c@d", [("", "a@b"), ("", "c@d")]),
        ('A <a@b>,"C, D"<c@d> ,e@f', [("A", "a@b"), ("C, D", "c@d"), ("", "e@f")]),
    ],
)
def test_plain_forms_take_the_fast_path(value: str, expected: list[tuple[str, str]]) -> None:
    plain = _plain_addresses(value)
    assert plain is not None
    assert [(a.display_name, a.addr_spec) for a in plain] == expected
    assert seen(plain) == parsed("From", value)


@pytest.mark.parametrize(
    "value",
    [
        "Bob J. Smith <b@example.com>",  # a dot outside quotes: obsolete syntax
        "Smith, Bob <b@example.com>",  # a comma outside quotes: two mailboxes
        "=?utf-8?q?J=C3=BCrgen?= <j@example.com>",
        '"Bob \\"B\\" Smith" <b@example.com>',
        "b@example.com (Bob)",
        "undisclosed-recipients:;",
        "Bob\r\n <b@example.com>",
        "Zoë <z@example.com>",
        "<b@[127.0.0.1]>",
        "a@b,",
        "",
    ],
)
def test_other_forms_go_to_the_parser(value: str) -> None:
    assert _plain_addresses(value) is None
    assert seen(_address_list("From", value)) == parsed("From", value)


def test_the_size_cap_comes_first() -> None:
    value = "a@b, " * (MAX_ADDRESS_HEADER // 5) + "c@d"
    assert _plain_addresses(value) is not None
    assert _address_list("From", value) == []
