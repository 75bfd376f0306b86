"""Spam verdict headers and trusted relays."""

from __future__ import annotations

import ipaddress

import pytest

from maskmail.core.spam import headers_say_spam, is_trusted, rspamd_action_is_spam

LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1"))


@pytest.mark.parametrize(
    ("fields", "spam"),
    [
        ([("X-Spam-Flag", "YES")], True),
        ([("X-Spam-Flag", "NO")], False),
        ([("X-Spam-Status", "Yes, score=12.3 required=5.0 tests=GTUBE")], True),
        ([("X-Spam-Status", "No, score=0.1 required=5.0")], False),
        ([("x-spam", " yes")], True),
        ([("X-Spamd-Result", "default: True [1000.00 / 15.00]; GTUBE(1000.00)")], True),
        ([("X-Spamd-Result", "default: False [0.50 / 15.00]")], False),
        ([("X-Rspamd-Action", "add header")], True),
        ([("X-Rspamd-Action", "no action")], False),
        ([("X-Rspamd-Action", "greylist")], False),
        ([("Subject", "YES")], False),
        ([], False),
        # A forged "no" does not cancel a filter's "yes".
        ([("X-Spam-Flag", "YES"), ("X-Spam-Flag", "NO")], True),
    ],
)
def test_headers_say_spam(fields: list[tuple[str, str]], spam: bool) -> None:
    assert headers_say_spam(fields) is spam


def test_rspamd_actions() -> None:
    assert rspamd_action_is_spam("reject")
    assert rspamd_action_is_spam("Rewrite  Subject")
    assert not rspamd_action_is_spam("soft reject")
    assert not rspamd_action_is_spam("no action")


@pytest.mark.parametrize(
    ("peer", "trusted"),
    [
        ("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("::ffff:127.0.0.1", True),
        ("10.0.0.1", False), ("2001:db8::1", False), ("not-an-ip", False), (None, False),
    ],
)  # fmt: skip
def test_is_trusted(peer: str | None, trusted: bool) -> None:
    assert is_trusted(peer, LOOPBACK) is trusted


def test_nothing_is_trusted_with_no_networks() -> None:
    assert not is_trusted("127.0.0.1", ())
