"""Which mailboxes may be added, the verification message, and where a forward goes."""

from __future__ import annotations

import email
import email.policy

import pytest

from maskmail.core.errors import InvalidAddress
from maskmail.core.mailboxes import (
    Destination,
    digest,
    new_mailbox,
    new_proof,
    senders,
    targets,
    verification_message,
)


def _box(email: str, **flags: bool) -> Destination:
    values = {"verified": True, "paused": False, "default": False, "chosen": False, **flags}
    return Destination(
        len(email),
        email,
        verified=values["verified"],
        paused=values["paused"],
        default=values["default"],
        chosen=values["chosen"],
    )


def test_none_chosen_means_the_default() -> None:
    boxes = [_box("a@x.test", default=True), _box("b@x.test")]
    assert targets(boxes) == ("a@x.test",)


def test_chosen_ones_leave_out_unverified_and_paused() -> None:
    boxes = [
        _box("a@x.test", default=True),
        _box("b@x.test", chosen=True),
        _box("c@x.test", chosen=True, verified=False),
        _box("d@x.test", chosen=True, paused=True),
        _box("e@x.test", chosen=True),
    ]
    assert targets(boxes) == ("b@x.test", "e@x.test")


def test_a_paused_default_leaves_nothing_but_may_still_reply() -> None:
    boxes = [_box("a@x.test", default=True, paused=True), _box("b@x.test")]
    assert targets(boxes) == ()
    assert senders(boxes) == ("a@x.test",)


def test_only_the_addresses_verified_mailboxes_may_reply() -> None:
    boxes = [
        _box("a@x.test", default=True),
        _box("b@x.test", chosen=True),
        _box("c@x.test", chosen=True, verified=False),
    ]
    assert senders(boxes) == ("b@x.test",)


@pytest.mark.parametrize("bad", ["x@relay.test", "x@Sub.Relay.Test", "not an address", " a@b.c"])
def test_relay_domains_and_bad_addresses_are_refused(bad: str) -> None:
    with pytest.raises(InvalidAddress) as caught:
        new_mailbox(bad, {"relay.test"})
    assert caught.value.details == {"field": "email"}


def test_a_good_mailbox_has_its_domain_lower_cased() -> None:
    assert new_mailbox("Me@Example.NET", {"relay.test"}) == "Me@example.net"


def test_proofs_are_random_and_stored_hashed() -> None:
    one, two = new_proof(), new_proof()
    assert one.token != two.token
    assert len(one.code) == 6 and one.code.isdigit()
    assert one.code_hash == digest(one.code) != one.code


def test_the_message_carries_link_and_code() -> None:
    raw = verification_message(
        to="me@example.net",
        sender="m@relay.test",
        link="https://r/v?token=T",
        code="012345",
        when=0,
    )
    parsed = email.message_from_bytes(raw, policy=email.policy.default)
    assert parsed["To"] == "me@example.net"
    assert parsed["Auto-Submitted"] == "auto-generated"
    body = parsed.get_body().get_content()  # type: ignore[union-attr]
    assert "https://r/v?token=T" in body and "012345" in body
