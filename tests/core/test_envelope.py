"""Envelope address rules: line breaks, malformed addresses, our domain or not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import maskmail
from maskmail.core import custom_domains, subdomains
from maskmail.core.envelope import (
    Kind,
    Located,
    Mailbox,
    check_sender,
    is_ours,
    locate,
    normal_domain,
    ours_among,
    parse_mailbox,
)
from maskmail.core.errors import InvalidAddress


def test_parses_and_lowercases_domain_only() -> None:
    assert parse_mailbox("AbC@Relay.Test") == Mailbox("AbC", "relay.test")
    assert str(parse_mailbox("x.y+z@relay.test.")) == "x.y+z@relay.test"


def test_unicode_addresses_parse() -> None:
    assert parse_mailbox("jürgen@bücher.example").domain == "bücher.example"


@pytest.mark.parametrize(
    "raw",
    [
        "a\r@relay.test", "a\n@relay.test", "a@relay.test\r\n", "a\x00@relay.test",
        "a@relay.test\rRCPT TO:<b@relay.test>",
    ],
)  # fmt: skip
def test_line_breaks_are_refused(raw: str) -> None:
    with pytest.raises(InvalidAddress, match="CR, LF"):
        parse_mailbox(raw)
    with pytest.raises(InvalidAddress):
        check_sender(raw)


@pytest.mark.parametrize(
    "raw",
    [
        "", "plain", "@relay.test", "a@", "a b@relay.test", "a@relay..test",
        "a@-relay.test", "a@relay_test.com", ".a@relay.test", "a..b@relay.test",
        "<a@relay.test>", "a@[127.0.0.1]", "x" * 65 + "@relay.test", "a@" + "b" * 64 + ".test",
        "a\t@relay.test",
    ],
)  # fmt: skip
def test_malformed_addresses_are_refused(raw: str) -> None:
    with pytest.raises(InvalidAddress):
        parse_mailbox(raw)


def test_is_ours_compares_the_whole_domain() -> None:
    ours = {"relay.test", "old.test"}
    assert is_ours(parse_mailbox("a@RELAY.test"), ours)
    assert is_ours(parse_mailbox("a@old.test"), ours)
    assert not is_ours(parse_mailbox("a@evil-relay.test"), ours)
    assert is_ours(parse_mailbox("a@sub.relay.test"), ours)
    assert not is_ours(parse_mailbox("a@x.sub.relay.test"), ours)
    assert not is_ours(parse_mailbox("a@relay.test.evil.com"), ours)


def test_locate_reads_a_recipient_once() -> None:
    ours = {"relay.test"}
    assert locate("AbC@Relay.Test.", ours) == Located(
        Mailbox("AbC", "relay.test"), "AbC@relay.test", Kind.ADDRESS, ("relay.test", None)
    )
    on_sub = locate("abc@shop.relay.test", ours)
    assert (on_sub.kind, on_sub.place) == (Kind.ADDRESS, ("relay.test", "shop"))
    assert locate("R.abc@relay.test", ours).kind is Kind.REVERSE_ALIAS
    assert locate("Bounce+1.2.x@relay.test", ours).kind is Kind.BOUNCE
    # A bounce address needs its "+": a local part that merely starts so is an address.
    assert locate("bounces@relay.test", ours).kind is Kind.ADDRESS
    custom = locate("abc@shop.example", ours)
    assert (custom.kind, custom.place, custom.address) == (Kind.ADDRESS, None, "abc@shop.example")
    with pytest.raises(InvalidAddress):
        locate("abc\r\n@relay.test", ours)


def test_ours_among_names_the_addresses_at_the_relay() -> None:
    ours = {"relay.test"}
    found = ours_among(["a@relay.test", "b@sub.relay.test", "c@example.com", "<bad>", ""], ours)
    assert found == {"a@relay.test", "b@sub.relay.test"}
    assert ours_among([], ours) == frozenset()


def test_empty_sender_is_a_bounce_and_allowed() -> None:
    assert check_sender("") == ""
    assert check_sender("someone@example.com") == "someone@example.com"


def test_a_domain_has_one_form_whichever_rule_reads_it() -> None:
    written = " Shop.EXAMPLE. "
    assert normal_domain(written) == "shop.example"
    assert parse_mailbox(f"a@{written.strip()}").domain == "shop.example"
    assert custom_domains.check_domain(written) == "shop.example"
    assert subdomains.own_label(f"mx.{written.strip()}", written) == "mx"
    # The envelope keeps refusing white space inside an address.
    with pytest.raises(InvalidAddress):
        parse_mailbox("a@shop.example ")


# Lower case and the final dot dropped, in either order: the form written out again.
_SPELLED_OUT = re.compile(r"lower\(\)(\.strip\(\))?\.r?strip\(\"\.\"\)|rstrip\(\"\.\"\)\.lower\(\)")


def test_no_door_spells_the_domain_form_out_again() -> None:
    root = Path(maskmail.__file__).parent
    home = root / "core" / "envelope.py"
    found = [
        f"{path.relative_to(root)}:{number}"
        for path in sorted(root.rglob("*.py"))
        if path != home
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if _SPELLED_OUT.search(line)
    ]
    assert found == []
