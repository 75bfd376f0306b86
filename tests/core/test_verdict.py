"""decide(): every branch, and what each verdict counts."""

from __future__ import annotations

import dataclasses

import pytest

from maskmail.core.errors import AddressDisabled, NotOwner, NotYetChecked, RelayDenied, ReplyLoops
from maskmail.core.records import RelayAddress
from maskmail.core.senders import Authentication
from maskmail.core.verdict import (
    DISABLED,
    FORGED_FROM,
    LOOPS,
    NOT_AUTHENTICATED,
    NOT_OWNER,
    NOT_YET_CHECKED,
    Action,
    Facts,
    ReplyFacts,
    Verdict,
    decide,
    decide_reply,
)

OWNER = "owner@example.com"


def make_address(*, enabled: bool = True, block_spam: bool = False) -> RelayAddress:
    return RelayAddress(
        id=7, user_id=1, address="abcdefgh", domain="relay.test", subdomain=None,
        enabled=enabled, block_spam=block_spam, description="", created_time=0,
        updated_time=None, num_forwarded=0, num_blocked=0, num_replied=0, num_spam=0,
    )  # fmt: skip


def test_enabled_address_forwards_to_owner() -> None:
    verdict = decide(make_address(), Facts(owner_mailboxes=(OWNER,)))
    assert verdict.action is Action.FORWARD
    assert verdict.targets == (OWNER,)
    assert verdict.counters == ("num_forwarded",)


def test_disabled_address_blocks_even_spam() -> None:
    for spam in (False, True):
        verdict = decide(make_address(enabled=False), Facts(owner_mailboxes=(OWNER,), spam=spam))
        assert verdict.action is Action.BLOCK
        assert verdict.targets == ()
        assert verdict.counters == ("num_blocked",)


def test_spam_with_block_spam_is_discarded_and_counted_as_spam() -> None:
    verdict = decide(make_address(block_spam=True), Facts(owner_mailboxes=(OWNER,), spam=True))
    assert verdict.action is Action.SPAM
    assert verdict.targets == ()
    assert verdict.counters == ("num_spam",)


def test_spam_without_block_spam_is_forwarded_and_counts_twice() -> None:
    verdict = decide(make_address(), Facts(owner_mailboxes=(OWNER,), spam=True))
    assert verdict.action is Action.FORWARD
    assert verdict.spam
    assert verdict.counters == ("num_forwarded", "num_spam")


def test_ham_with_block_spam_is_forwarded() -> None:
    verdict = decide(make_address(block_spam=True), Facts(owner_mailboxes=(OWNER,)))
    assert verdict.action is Action.FORWARD
    assert not verdict.spam


@pytest.mark.parametrize("enabled", [True, False])
def test_looped_mail_is_dropped_without_counting(enabled: bool) -> None:
    verdict = decide(make_address(enabled=enabled), Facts(owner_mailboxes=(OWNER,), looped=True))
    assert verdict.action is Action.DROP
    assert verdict.counters == ()


def test_owner_mailbox_at_relay_is_refused() -> None:
    facts = Facts(owner_mailboxes=("other@relay.test",), owner_is_relay=True)
    verdict = decide(make_address(), facts)
    assert verdict.action is Action.REFUSE
    assert verdict.counters == ()


def test_verdict_is_frozen() -> None:
    verdict = Verdict(Action.FORWARD, "x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.action = Action.BLOCK  # type: ignore[misc]


def test_reply_counts_replied() -> None:
    assert Verdict(Action.REPLY, "x").counters == ("num_replied",)


OUTSIDE = "shop@example.org"


def test_owner_reply_goes_to_the_outside_sender_and_counts_replied() -> None:
    facts = ReplyFacts(envelope_is_owner=True, header_is_owner=True)
    for authenticated in (None, Authentication.PASS, Authentication.ABSENT):
        verdict = decide_reply(
            make_address(), dataclasses.replace(facts, authentication=authenticated), OUTSIDE
        )
        assert (verdict.action, verdict.targets) == (Action.REPLY, (OUTSIDE,))
        assert verdict.counters == ("num_replied",)


@pytest.mark.parametrize(
    ("facts", "enabled", "refusal", "reason"),
    [
        (ReplyFacts(envelope_is_owner=False), True, NotOwner, NOT_OWNER),
        # A stranger is not told that the address is disabled.
        (ReplyFacts(envelope_is_owner=False), False, NotOwner, NOT_OWNER),
        (ReplyFacts(envelope_is_owner=True, header_is_owner=False), True, NotOwner, FORGED_FROM),
        (
            ReplyFacts(envelope_is_owner=True, authentication=Authentication.FAIL),
            True,
            NotOwner,
            NOT_AUTHENTICATED,
        ),
        (
            ReplyFacts(envelope_is_owner=True, authentication=Authentication.UNFINISHED),
            True,
            NotYetChecked,
            NOT_YET_CHECKED,
        ),
        (ReplyFacts(envelope_is_owner=True), False, AddressDisabled, DISABLED),
        (
            ReplyFacts(envelope_is_owner=True, header_is_owner=True),
            False,
            AddressDisabled,
            DISABLED,
        ),
    ],
)
def test_reply_refusals(
    facts: ReplyFacts, enabled: bool, refusal: type[RelayDenied], reason: str
) -> None:
    verdict = decide_reply(make_address(enabled=enabled), facts, OUTSIDE)
    assert (verdict.action, verdict.refusal, verdict.reason) == (Action.REFUSE, refusal, reason)
    assert verdict.targets == ()
    assert verdict.counters == ()


@pytest.mark.parametrize(
    ("outside", "loops"),
    [
        ("r.aaaaaaaaaaaaaaaaaaaaaaaa@relay.test", True),
        ("R.AAAAAAAAAAAAAAAAAAAAAAAA@RELAY.TEST.", True),
        ("r.aaaaaaaaaaaaaaaaaaaaaaaa@sub.relay.test", True),
        ("abcdefgh@relay.test", True),
        ("ABCDEFGH@Relay.Test.", True),
        # Another relay address is another person on this relay: that is a conversation.
        ("zzzzzzzz@relay.test", False),
        ("r.aaaaaaaaaaaaaaaaaaaaaaaa@example.org", False),
        ("abcdefgh@relay.test.example.org", False),
        (OUTSIDE, False),
    ],
)
def test_reply_to_our_own_addresses_would_loop(outside: str, loops: bool) -> None:
    facts = ReplyFacts(envelope_is_owner=True, header_is_owner=True)
    verdict = decide_reply(make_address(), facts, outside)
    if loops:
        assert (verdict.action, verdict.refusal, verdict.reason) == (
            Action.REFUSE,
            ReplyLoops,
            LOOPS,
        )
    else:
        assert verdict.action is Action.REPLY
    # A stranger still learns nothing more than that they are not the owner.
    stranger = decide_reply(make_address(), ReplyFacts(envelope_is_owner=False), outside)
    assert stranger.reason == NOT_OWNER


def test_no_mailbox_taking_mail_blocks() -> None:
    verdict = decide(make_address(), Facts(owner_mailboxes=()))
    assert (verdict.action, verdict.targets, verdict.counters) == (
        Action.BLOCK,
        (),
        ("num_blocked",),
    )


def test_a_forward_to_several_mailboxes_counts_once() -> None:
    verdict = decide(make_address(), Facts(owner_mailboxes=(OWNER, "work@example.net")))
    assert verdict.targets == (OWNER, "work@example.net")
    assert verdict.counters == ("num_forwarded",)
