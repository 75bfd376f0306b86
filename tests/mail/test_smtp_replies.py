"""The SMTP lines a few core errors become: permanent only where the answer is final."""

from __future__ import annotations

from maskmail.core.errors import NotOwner, NotYetChecked
from maskmail.mail.smtp_replies import reply_for


def test_unfinished_sender_checks_defer_the_reply() -> None:
    line = reply_for(NotYetChecked("SPF and DKIM could not be checked just now"))
    assert line == "451 4.7.0 SPF and DKIM could not be checked just now"


def test_a_stranger_is_refused_for_good() -> None:
    assert reply_for(NotOwner("not yours")).startswith("550 5.7.1 ")
