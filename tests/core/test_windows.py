"""Day windows: when a limit bites and how the wait reads; verification mail's two limits."""

from __future__ import annotations

import pytest

from maskmail.core.errors import RateLimited
from maskmail.core.mailboxes import MailLimits, address_key, check_mail_rate
from maskmail.core.windows import DAY, check_day, in_words


@pytest.mark.parametrize(
    ("seconds", "words"),
    [(1, "a minute"), (60, "a minute"), (61, "2 minutes"), (3540, "59 minutes"), (3599, "an hour"),
     (3600, "an hour"), (3601, "2 hours"), (DAY, "24 hours")],
)  # fmt: skip
def test_waits_read_rounded_up(seconds: int, words: str) -> None:
    assert in_words(seconds) == words


def test_the_oldest_counted_time_decides_the_wait() -> None:
    check_day([10, 20], 3, 30, "x")
    check_day([10, 20, 30], 0, 30, "x")  # no limit
    with pytest.raises(RateLimited) as caught:
        check_day([10, 20, 30], 3, 40, "three things in a day")
    assert caught.value.retry_after == 10 + DAY - 40
    assert caught.value.message == "three things in a day, the limit; try again in 24 hours"
    check_day([10, 20, 30], 3, 10 + DAY, "x")  # the oldest left the window


def test_verification_mail_counts_per_address_and_in_all() -> None:
    key = address_key("Stranger@Example.NET")
    assert key == address_key("stranger@example.net") and "stranger" not in key
    other = address_key("other@example.net")
    limits = MailLimits(per_address=2, per_user=3)
    check_mail_rate([(key, 1), (other, 2)], key, limits, 10)
    with pytest.raises(RateLimited, match="this mailbox was sent 2"):
        check_mail_rate([(key, 1), (key, 2)], key, limits, 10)
    with pytest.raises(RateLimited, match="this account sent 3"):
        check_mail_rate(
            [(other, 1), (other, 2), (key, 3)], address_key("new@x.example"), limits, 10
        )
