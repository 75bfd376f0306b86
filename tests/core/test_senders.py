"""Owner matching and Authentication-Results: what lets a reply through."""

from __future__ import annotations

import pytest

from maskmail.core.senders import Authentication, authentication, same_mailbox


@pytest.mark.parametrize(
    ("one", "other", "same"),
    [
        ("alice@example.com", "alice@example.com", True),
        ("alice@example.com", "ALICE@EXAMPLE.COM", True),
        ("alice@example.com", "alice@example.com.", True),
        ("alice@example.com", "alice+tag@example.com", False),
        ("alice+tag@example.com", "alice@example.com", False),
        ("alice@example.com", "alice@sub.example.com", False),
        ("alice@example.com", "malice@example.com", False),
        ("alice@example.com", '"alice"@example.com', False),
        ("alice@example.com", "alice@example.com\r\nRCPT TO:<x@y>", False),
        ("alice@example.com", "", False),
        ("", "", False),
        ("alice@bücher.example", "alice@xn--bcher-kva.example", True),
    ],
)
def test_same_mailbox(one: str, other: str, same: bool) -> None:
    assert same_mailbox(one, other) is same
    assert same_mailbox(other, one) is same


OWNER_DOMAIN = "example.com"


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["mx; spf=pass smtp.mailfrom=alice@example.com"], Authentication.PASS),
        (["mx; spf=pass smtp.mailfrom=example.com"], Authentication.PASS),
        (["mx; spf=pass smtp.mailfrom=alice@EXAMPLE.com"], Authentication.PASS),
        (["mx; dkim=pass header.d=example.com header.s=s1"], Authentication.PASS),
        (["mx; dkim=pass header.i=@example.com"], Authentication.PASS),
        # A subdomain does not sign for its parent.
        (["mx; dkim=pass header.d=mail.example.com"], Authentication.FAIL),
        (["mx; dkim=pass header.d=com"], Authentication.FAIL),
        (["mx; spf=pass smtp.mailfrom=alice@example.com.evil.test"], Authentication.FAIL),
        (["mx; spf=fail smtp.mailfrom=alice@example.com; dkim=none"], Authentication.FAIL),
        (["mx; spf=softfail smtp.mailfrom=alice@example.com"], Authentication.FAIL),
        (["mx; spf=neutral smtp.mailfrom=alice@example.com"], Authentication.FAIL),
        (["mx; dkim=pass header.d=evil.test"], Authentication.FAIL),
        # A DNS failure at the relay is no verdict on the sender: the reply waits.
        (["mx; spf=temperror smtp.mailfrom=alice@example.com"], Authentication.UNFINISHED),
        (
            ["mx; spf=temperror smtp.mailfrom=alice@example.com; dkim=fail header.d=x.test"],
            Authentication.UNFINISHED,
        ),
        (
            ["mx; spf=temperror smtp.mailfrom=alice@example.com; dkim=pass header.d=example.com"],
            Authentication.PASS,
        ),
        (["mx; none"], Authentication.ABSENT),
        (["mx; arc=none"], Authentication.ABSENT),
        ([], Authentication.ABSENT),
        # The newest header decides; what the sender wrote below it does not count.
        (
            [
                "mx; spf=fail smtp.mailfrom=alice@example.com",
                "mx; spf=pass smtp.mailfrom=x@example.com",
            ],
            Authentication.FAIL,
        ),
        (
            ["this is not ; = a header", "mx; spf=pass smtp.mailfrom=x@example.com"],
            Authentication.FAIL,
        ),
        (["mx;\r\n\tspf=pass\r\n smtp.mailfrom=alice@example.com"], Authentication.PASS),
    ],
)
def test_authentication_newest_header(values: list[str], expected: Authentication) -> None:
    assert authentication(values, OWNER_DOMAIN) is expected


def test_authserv_ids_pick_the_trusted_hosts_headers() -> None:
    values = [
        "forged.test; spf=pass smtp.mailfrom=alice@example.com",
        "garbage ;; ==",
        "MX.Relay.Test; spf=fail smtp.mailfrom=alice@example.com",
    ]
    assert authentication(values, OWNER_DOMAIN, ["mx.relay.test"]) is Authentication.FAIL
    assert authentication(values[:2], OWNER_DOMAIN, ["mx.relay.test"]) is Authentication.ABSENT
    # A pass the sender forged with the relay's own id, below the relay's header, loses.
    forged = [*values, "mx.relay.test; dkim=pass header.d=example.com"]
    assert authentication(forged, OWNER_DOMAIN, ["mx.relay.test"]) is Authentication.FAIL
    passing = ["mx.relay.test; dkim=pass header.d=example.com", *values]
    assert authentication(passing, OWNER_DOMAIN, ["mx.relay.test"]) is Authentication.PASS


def test_a_parent_domain_signs_for_its_subdomain() -> None:
    values = ["mx; dkim=pass header.d=example.com"]
    assert authentication(values, "mail.example.com") is Authentication.PASS
    assert authentication(values, "mail.example.community") is Authentication.FAIL


def test_an_oversized_header_is_not_parsed() -> None:
    """authres is quadratic in the number of results; a header longer than any real one
    is never handed to it: as the newest it fails, with authserv-ids it is skipped."""
    huge = "mx; " + "; ".join(["dkim=pass header.d=example.com"] * 400)
    assert authentication([huge], OWNER_DOMAIN) is Authentication.FAIL
    ok = "mx; spf=fail smtp.mailfrom=alice@example.com"
    assert authentication([huge, ok], OWNER_DOMAIN, ["mx"]) is Authentication.FAIL
    assert authentication([huge], OWNER_DOMAIN, ["mx"]) is Authentication.ABSENT
