"""Rules of addresses made on first mail (issue 15 item 10, issue 21 items 2 and 3):
local parts, descriptions, the per-sender flood guard, the names catch-all never makes,
and the owner's limits."""

from __future__ import annotations

import pytest

from maskmail.core.descriptions import DESCRIPTION_MAX
from maskmail.core.errors import AddressNotFound, CatchAllPaused, InvalidAddress
from maskmail.core.first_mail import (
    CERTIFICATE_MAILBOXES,
    FloodGuard,
    OwnerLimits,
    OwnerMade,
    catch_all_local,
    check_owner,
    first_mail_description,
    first_mail_local,
    pause_reason,
)


@pytest.mark.parametrize(
    ("local", "made"),
    [
        ("shop", "shop"),
        ("Shop.Orders", "shop.orders"),
        ("a_b-c.9", "a_b-c.9"),
        ("x" * 64, "x" * 64),
    ],
)
def test_local_parts_that_may_be_made_are_lower_cased(local: str, made: str) -> None:
    assert catch_all_local(local) == made


@pytest.mark.parametrize("local", ["", "a+b", "a=b", "caf\u00e9", "x" * 65, "a b", "a\nb", "a@b"])
def test_other_local_parts_are_refused(local: str) -> None:
    with pytest.raises(InvalidAddress):
        catch_all_local(local)


def test_the_description_names_the_sender_within_the_limit() -> None:
    assert first_mail_description("news@shop.example") == "first mail from news@shop.example"
    assert first_mail_description("") == "first mail: a bounce"
    long = first_mail_description("a" * 100 + "@example.com")
    assert len(long) == DESCRIPTION_MAX and long.startswith("first mail from aaa")
    assert "\n" not in first_mail_description("evil\n@example.com")


def test_the_guard_counts_per_sender_within_the_window() -> None:
    guard = FloodGuard(per_sender=2, window=60)
    assert guard.take("a@x.example", 0) and guard.take("A@X.example", 1)
    assert not guard.take("a@x.example", 2)
    assert guard.take("b@x.example", 2)  # another sender has its own allowance
    assert not guard.take("a@x.example", 59)
    assert guard.take("a@x.example", 60.5)  # the first one left the window


def test_giving_back_restores_the_allowance() -> None:
    guard = FloodGuard(per_sender=1, window=60)
    assert guard.take("a@x.example", 5)
    guard.give_back("A@x.example", 5)
    assert guard.take("a@x.example", 6)
    guard.give_back("nobody@x.example", 6)  # nothing taken: nothing happens
    assert not guard.take("a@x.example", 7)


def test_the_guard_forgets_the_oldest_senders_past_its_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("maskmail.core.first_mail.MAX_SENDERS", 3)
    guard = FloodGuard(per_sender=1, window=60)
    for sender in ("a", "b", "c", "d"):
        assert guard.take(sender, 0)
    assert guard.take("a", 0)  # forgotten, so allowed again
    assert not guard.take("d", 0)


def test_the_guard_is_asked_without_counting() -> None:
    """RCPT asks (``allows``); only the message that makes an address counts (``take``)."""
    guard = FloodGuard(per_sender=1, window=60)
    assert all(guard.allows("a@x.example", 0) for _ in range(5))
    assert guard.take("a@x.example", 0)
    assert not guard.allows("A@x.example", 30)
    assert guard.allows("a@x.example", 60.5)


@pytest.mark.parametrize("local", [*sorted(CERTIFICATE_MAILBOXES), "Admin", "POSTMASTER"])
def test_certificate_mailboxes_are_never_made_on_first_mail(local: str) -> None:
    """CA/Browser Forum's addresses for validating a domain: whoever held one could have a
    certificate issued for the subdomain or domain."""
    with pytest.raises(AddressNotFound):
        first_mail_local(local)
    # Chosen on purpose (an alias of one's own domain), it is a local part as any other.
    assert catch_all_local(local) == local.lower()


@pytest.mark.parametrize("local", ["admins", "my-admin", "web.master", "postmaster1"])
def test_names_near_them_are_made(local: str) -> None:
    assert first_mail_local(local) == local


@pytest.mark.parametrize(
    ("made", "limits", "says"),
    [
        (OwnerMade(0, 0), OwnerLimits(1, 1), None),
        (OwnerMade(99, 9_999), OwnerLimits(100, 10_000), None),
        (OwnerMade(100, 100), OwnerLimits(100, 10_000), "100 addresses were made"),
        (OwnerMade(5, 10_000), OwnerLimits(100, 10_000), "you keep 10000 addresses"),
        (OwnerMade(100, 10_000), OwnerLimits(100, 10_000), "you keep 10000 addresses"),
        (OwnerMade(10**6, 10**6), OwnerLimits(0, 0), None),
    ],
)
def test_the_owners_limits_pause_catch_all_and_say_why(
    made: OwnerMade, limits: OwnerLimits, says: str | None
) -> None:
    reason = pause_reason(made, limits)
    if says is None:
        assert reason is None
        check_owner(made, limits)
        return
    assert reason is not None and says in reason and reason.startswith("catch-all paused")
    with pytest.raises(CatchAllPaused) as caught:
        check_owner(made, limits)
    assert caught.value.message == reason and caught.value.retry_after > 0
