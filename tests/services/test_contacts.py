"""Who may be a contact: never an address at one of the relay's domains."""

from __future__ import annotations

import pytest

from maskmail.core.errors import InvalidAddress
from maskmail.services.contacts import outside_contact


@pytest.mark.parametrize(
    "email",
    [
        "someone@maskrelay.net",
        "R.ABC@MaskRelay.NET",
        "x@" + "".join(chr(ord(c) + 0xFEE0) for c in "maskrelay") + ".net",
        "r.abc@sub.maskrelay.net",
    ],
)
def test_an_address_of_the_relay_is_never_a_contact(email: str) -> None:
    """Checked with a public relay domain: the test domain's ``.test`` is refused for
    being special-use before the relay-domain rule is reached."""
    with pytest.raises(InvalidAddress, match="relay domain"):
        outside_contact(email, frozenset({"maskrelay.net"}))


def test_an_older_relay_domain_is_the_relays_too() -> None:
    """A domain addresses were made at before MASKMAIL_DOMAIN changed still reaches them."""
    ours = frozenset({"maskrelay.net", "old-relay.org"})
    with pytest.raises(InvalidAddress, match="relay domain"):
        outside_contact("x@sub.old-relay.org", ours)
    assert outside_contact("x@bold-relay.org", ours) == "x@bold-relay.org"
