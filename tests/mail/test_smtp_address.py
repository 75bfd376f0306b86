"""MAIL and RCPT arguments: the fast reading of plain forms gives what aiosmtpd's parser,
under ``RelaySMTP``'s own rules, gives for every argument."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maskmail.mail import server
from maskmail.mail.server import RelaySMTP
from tests.profiles import examples

ATEXT = "abzAZ09!#$%&'*+/=?^_`{|}~-"
# The specials of RFC 5322 and 5321, white space, line breaks, NUL, non-ASCII letters
# and spaces, and the pieces of an encoded word.
SPECIALS = '<>@.,:;"\\()[] \t\r\n\x00=?é\xa0\u2003'
PIECES = [
    *SPECIALS,
    "a",
    "Bob",
    "x.y",
    "x@y.example",
    "<a@b.example>",
    "<>",
    "=?utf-8?q?x?=",
    "@a,@b:",
    " SIZE=10240",
    " BODY=8BITMIME",
    "(c)",
]
PART = st.text(alphabet=ATEXT + ".", max_size=12) | st.lists(
    st.sampled_from(PIECES), max_size=4
).map("".join)
# After ">": space and tab, which the parser skips, and other white space after them;
# other white space first, which it keeps; a comment.
REST = st.builds(str.__add__, st.text(alphabet=" \t\xa0\u2003(", max_size=3), PART)
ARGS = (
    st.text(alphabet=ATEXT + SPECIALS, max_size=40)
    | st.lists(st.sampled_from(PIECES), max_size=12).map("".join)
    | st.builds(lambda local, domain, rest: f"<{local}@{domain}>{rest}", PART, PART, REST)
    | st.builds(str.__add__, st.just("<>"), REST)
)
LIMITS = st.sampled_from([0, 1, 4, 64])


def read(arg: str, local_part_limit: int = 0) -> tuple[str | None, str | None]:
    # _getaddr reads nothing else of the instance: no handler, loop or transport needed.
    smtp = RelaySMTP.__new__(RelaySMTP)
    smtp.local_part_limit = local_part_limit
    return smtp._getaddr(arg)


def read_plainly(arg: str, local_part_limit: int = 0) -> tuple[str | None, str | None]:
    """The same, every argument through aiosmtpd's parser."""
    with mock.patch.object(server, "_plain", return_value=None):
        return read(arg, local_part_limit)


@given(arg=ARGS, local_part_limit=LIMITS)
@settings(max_examples=examples(1000))
def test_any_argument_reads_as_aiosmtpd_reads_it(arg: str, local_part_limit: int) -> None:
    assert read(arg, local_part_limit) == read_plainly(arg, local_part_limit)


@given(arg=ARGS | st.text(max_size=60), local_part_limit=LIMITS)
@settings(max_examples=examples(1000))
def test_no_argument_makes_the_reading_raise(arg: str, local_part_limit: int) -> None:
    # A raise here reaches the handler's handle_exception: a 451 and an ERROR log.
    address, rest = read_plainly(arg, local_part_limit)
    assert isinstance(address, str) and isinstance(rest, str)


# Arguments the email package's parser raises on (IndexError, AttributeError,
# UnboundLocalError) rather than refusing; tests/mail/test_recipients.py sends them.
PARSER_RAISES_ON = ["<", "a@", "<@", '"', "<x@[<>", "a@[", "\\@[ "]


@pytest.mark.parametrize("arg", [*PARSER_RAISES_ON, "(" * 5000, "<" + "(" * 5000])
def test_an_argument_the_parser_raises_on_is_read_as_no_address(arg: str) -> None:
    # aiosmtpd answers an empty address with its own 501 syntax line, MAIL and RCPT alike.
    assert read(arg) == read_plainly(arg) == ("", "")


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("<alice@example.com>", ("alice@example.com", "")),
        ("<Alice.B+tag@Mail.Example.COM>", ("Alice.B+tag@Mail.Example.COM", "")),
        ("<a@b> SIZE=10240 BODY=8BITMIME", ("a@b", "SIZE=10240 BODY=8BITMIME")),
        ("<a@b>\t \u2003SIZE=1", ("a@b", "SIZE=1")),
        ("<a@b>SIZE=1", ("a@b", "SIZE=1")),
        ("<a@b>\xa0x", ("a@b", "\xa0x")),
        ("<{|}~!#$%&'*/=^_`-@x-y.z>", ("{|}~!#$%&'*/=^_`-@x-y.z", "")),
        ("<>", ("<>", "")),
        ("<> SIZE=1", ("<>", " SIZE=1")),
        ("<>(c)", ("<>", "(c)")),
    ],
)
def test_plain_forms_are_read_without_the_parser(
    arg: str, expected: tuple[str, str | None]
) -> None:
    assert server._plain(arg, 0) == expected
    assert read(arg) == read_plainly(arg) == expected


@pytest.mark.parametrize(
    "arg",
    [
        '<"a b"@example.com>',  # quoted local part
        "<@a,@b:x@y.example>",  # source route
        "<a@b>(comment) SIZE=1",
        "<a@b> (comment)",
        "< a@b>",
        "<a @b>",
        "<a@b >",
        "<é@example.com>",
        "<a@exämple.com>",
        "<a@[192.0.2.1]>",  # address literal
        "<=?utf-8?q?x?=@b.example>",  # an encoded word, which the parser decodes
        "<a@=?utf-8?q?x?=>",
        "<a..b@c>",
        "<.a@c>",
        "<a.@c>",
        "<a@b.>",
        "<a@b",
        "<postmaster>",
        "a@b.example",
        " <a@b>",
        "<a@b@c>",
        "",
    ],
)
def test_other_forms_go_to_the_parser(arg: str) -> None:
    assert server._plain(arg, 0) is None
    assert read(arg) == read_plainly(arg)


@pytest.mark.parametrize("arg", ["<a\r@b>", "<a@b>\n", "<a\x00@b>", "\r\n<a@b>"])
def test_line_breaks_and_nul_go_to_the_handler_as_given(arg: str) -> None:
    assert read(arg) == read_plainly(arg) == (arg.strip(), "")


def test_a_local_part_over_the_limit_is_aiosmtpd_s_to_refuse() -> None:
    assert server._plain("<abcde@b.example>", 4) is None
    assert read("<abcde@b.example>", 4) == read_plainly("<abcde@b.example>", 4)
    assert read("<abcde@b.example> SIZE=1", 4) == ("abcde@b.example> SIZE=1", "")
    assert read("<abcd@b.example>", 4) == ("abcd@b.example", "")
