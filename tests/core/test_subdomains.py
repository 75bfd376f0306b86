"""Relay subdomain names (issue 15 item 7): shape, blocklist, tombstone."""

from __future__ import annotations

import pytest

from maskmail.core import subdomains
from maskmail.core.addresses import tombstone
from maskmail.core.errors import InvalidAddress


@pytest.mark.parametrize("name", ["abc", "a-b", "shop42", "0-0", "a" * 63, "x1-y2-z3"])
def test_valid_names_are_returned_as_given(name: str) -> None:
    assert subdomains.check_subdomain(name) == name


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("ab", "3 to 63"),
        ("a" * 64, "3 to 63"),
        ("", "3 to 63"),
        ("-abc", "not starting or ending"),
        ("abc-", "not starting or ending"),
        ("ABC", "lower-case"),
        ("a.b.c", "lower-case"),
        ("a_bc", "lower-case"),
        ("caf\u00e9", "lower-case"),
        ("abc\n", "lower-case"),
        ("admin", "not available"),
        ("my-shop-sales", "not available"),
        ("postmaster", "not available"),
    ],
)
def test_invalid_names_say_why(name: str, why: str) -> None:
    with pytest.raises(InvalidAddress, match=why) as caught:
        subdomains.check_subdomain(name)
    assert caught.value.details == {"field": "subdomain"}


def test_the_tombstone_is_the_host_names_and_never_an_addresss() -> None:
    assert subdomains.subdomain_tombstone("shop", "relay.test") == tombstone("shop.relay.test")
    assert subdomains.subdomain_tombstone("shop", "relay.test") != tombstone("shop@relay.test")
    assert subdomains.subdomain_tombstone("shop", "relay.test") != subdomains.subdomain_tombstone(
        "shop", "other.test"
    )
