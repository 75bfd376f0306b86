"""Rules of addresses made on first mail (issue 15 item 10): local parts, descriptions,
and the per-sender flood guard."""

from __future__ import annotations

import pytest

from maskmail.core.descriptions import DESCRIPTION_MAX
from maskmail.core.errors import InvalidAddress
from maskmail.core.first_mail import FloodGuard, catch_all_local, first_mail_description


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
