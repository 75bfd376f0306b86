"""Hard or soft: the classification of a bounce, and when hard ones pause an address."""

from __future__ import annotations

import pytest

from maskmail.core.dsn import Bounce, Kind, Report, classify, should_pause, status_code


@pytest.mark.parametrize(
    ("field", "code"),
    [
        ("5.1.1", "5.1.1"),
        (" 4.4.7 (delivery time expired)", "4.4.7"),
        ("5.7.1(policy)", "5.7.1"),
        ("2.0.0", "2.0.0"),
        ("550", None),
        ("5.1", None),
        ("x.1.1", None),
        ("", None),
        (None, None),
    ],
)
def test_status_code(field: str | None, code: str | None) -> None:
    assert status_code(field) == code


def test_library_permanent_with_a_5xx_status_is_hard() -> None:
    reports = [Report("failed", "5.1.1")]
    assert classify(permanent=True, temporary=False, reports=reports) == Bounce(Kind.HARD, "5.1.1")


def test_library_permanent_without_any_status_is_hard() -> None:
    # Exim's plain-text bounces name the failed recipient but carry no DSN fields.
    assert classify(permanent=True, temporary=False, reports=[]) == Bounce(Kind.HARD, "failed")


def test_a_failure_after_retries_ran_out_is_soft() -> None:
    got = classify(permanent=True, temporary=False, reports=[Report("failed", "4.4.7")])
    assert got == Bounce(Kind.SOFT, "4.4.7")


def test_delayed_is_soft() -> None:
    got = classify(permanent=False, temporary=True, reports=[Report("delayed", "4.4.1")])
    assert got == Bounce(Kind.SOFT, "4.4.1")
    assert classify(permanent=False, temporary=True, reports=[]) == Bounce(Kind.SOFT, "delayed")


def test_fields_decide_when_the_library_found_nothing() -> None:
    failed = classify(permanent=False, temporary=False, reports=[Report("failed", "5.2.2")])
    assert failed == Bounce(Kind.HARD, "5.2.2")
    errored = classify(permanent=False, temporary=False, reports=[Report("error", "")])
    assert errored == Bounce(Kind.HARD, "failed")
    delayed = classify(permanent=False, temporary=False, reports=[Report("delayed", "")])
    assert delayed == Bounce(Kind.SOFT, "delayed")
    # A refusal code with an Action nobody knows is still a refusal.
    odd = classify(permanent=False, temporary=False, reports=[Report("bounced", "5.0.0")])
    assert odd == Bounce(Kind.HARD, "5.0.0")


def test_no_report_at_all_is_an_unknown_soft_bounce() -> None:
    assert classify(permanent=False, temporary=False, reports=[]) == Bounce(Kind.SOFT, "unknown")
    relayed = classify(permanent=False, temporary=False, reports=[Report("relayed", "2.0.0")])
    assert relayed == Bounce(Kind.SOFT, "2.0.0")


@pytest.mark.parametrize(
    ("hard", "threshold", "paused", "expected"),
    [
        (4, 5, False, False),
        (5, 5, False, True),
        (9, 5, False, True),
        (5, 5, True, False),
        (100, 0, False, False),
        (1, 1, False, True),
    ],
)
def test_should_pause(hard: int, threshold: int, paused: bool, expected: bool) -> None:
    assert should_pause(hard, threshold, paused=paused) is expected
