"""Relay subdomain names (issue 15 item 7): shape, blocklist, tombstone."""

from __future__ import annotations

import pytest

from maskmail.core import subdomains
from maskmail.core.addresses import tombstone
from maskmail.core.errors import InvalidAddress, RateLimited


@pytest.mark.parametrize("name", ["abc", "a-b", "shop42", "0-0", "a" * 63, "x1-y2-z3"])
def test_valid_names_are_returned_as_given(name: str) -> None:
    assert subdomains.check_subdomain(name) == name


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("ab", "3 to 63"),
        ("a" * 64, "3 to 63"),
        ("", "3 to 63"),
        ("-abc", "start or end"),
        ("abc-", "start or end"),
        ("ABC", "lower case"),
        ("a.b.c", "without dots"),
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


@pytest.mark.parametrize(
    "name",
    [
        "mail", "smtp", "imap", "api", "mta-sts", "autoconfig", "autodiscover", "webmail",
        "ns1", "bounce", "dmarc", "relay", "localhost", "mx1", "ns12", "smtp-2", "mail01",
    ],
)  # fmt: skip
def test_infrastructure_names_are_not_available(name: str) -> None:
    """Issue 21 item 3: names a mail or web service publishes under its domain."""
    with pytest.raises(InvalidAddress, match="not available"):
        subdomains.check_subdomain(name)


@pytest.mark.parametrize("name", ["mailroom", "my-smtp", "apis", "relays", "ns-one", "api-docs"])
def test_names_that_only_contain_one_are_free(name: str) -> None:
    assert subdomains.check_subdomain(name) == name


def test_the_relays_own_host_is_not_available() -> None:
    assert subdomains.own_label("in.mx-a.relay.test", "relay.test") == "mx-a"
    with pytest.raises(InvalidAddress, match="not available"):
        subdomains.check_subdomain("mx-a", {"mx-a"})
    assert subdomains.check_subdomain("mx-a") == "mx-a"
    assert subdomains.own_label("relay.test", "relay.test") is None
    assert subdomains.own_label("mail.other.test", "relay.test") is None
    assert subdomains.own_label("MX.Relay.Test.", "relay.test") == "mx"


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("Shop", "lower case: 'shop', not 'Shop'"),
        ("SHOP-1", "lower case: 'shop-1', not 'SHOP-1'"),
        ("shop.", "without dots (such as 'shop')"),
        (".shop", "without dots (such as 'shop')"),
        ("Shop.", "without dots (such as 'shop')"),
        ("a.b.c", "without dots;"),
        ("ab-", "start or end with '-'"),
        ("s_hop", "letters, digits and '-' only"),
    ],
)
def test_a_wrong_name_says_what_to_type(name: str, says: str) -> None:
    with pytest.raises(InvalidAddress) as caught:
        subdomains.check_subdomain(name)
    assert says in caught.value.message and "control" not in caught.value.message


def test_names_a_day_are_limited_and_the_wait_is_told() -> None:
    day = subdomains.NAME_WINDOW
    subdomains.check_name_rate([100, 200], 3, 300)
    subdomains.check_name_rate([100, 200, 300], 0, 300)  # no limit
    with pytest.raises(RateLimited) as caught:
        subdomains.check_name_rate([100, 200, 300], 3, 400)
    assert caught.value.retry_after == 100 + day - 400
    assert "3 subdomain names in a day" in caught.value.message
    # Once the oldest is a day old, one more may be taken.
    subdomains.check_name_rate([100, 200, 300], 3, 100 + day)
