"""The bounce rules: what a bounce means, hard or soft, and when enough hard ones pause
an address. The mail plane's ``mail/dsn.py`` reads the bounce; this judges it.

Pure rules over what the mail plane read out of a delivery status notification
(RFC 3464): whether a bounce-parsing library found permanent or temporary failures, and
the ``Action``/``Status`` fields of its delivery-status blocks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

# Hard bounces within this many seconds count towards the pause threshold.
WINDOW = 86_400
# An RFC 3463 status code: class.subject.detail.
_STATUS = re.compile(r"^[245]\.\d{1,3}\.\d{1,3}$")
UNKNOWN = "unknown"


class Kind(StrEnum):
    HARD = "hard"  # the owner's mailbox refused for good (a 5.x.x status)
    SOFT = "soft"  # delayed, temporary, or not a report we understand: never counts


@dataclass(frozen=True, slots=True)
class Report:
    """One per-recipient block of a ``message/delivery-status`` part."""

    action: str
    status: str


@dataclass(frozen=True, slots=True)
class Bounce:
    kind: Kind
    status: str  # an RFC 3463 code such as "5.1.1", or a word when none was given


def status_code(field: str | None) -> str | None:
    """The RFC 3463 code at the start of a ``Status`` field, or None if it has none."""
    token = (field or "").strip().split(" ", 1)[0].split("(", 1)[0]
    return token if _STATUS.match(token) else None


def classify(*, permanent: bool, temporary: bool, reports: Iterable[Report]) -> Bounce:
    """Hard only for a permanent failure with a 5.x.x status (or none given).

    ``permanent``/``temporary`` say what the bounce library detected; ``reports`` are the
    delivery-status blocks, read when the library found nothing. A failure whose only
    status is 4.x.x (the sender's MTA gave up retrying) is soft: the mailbox did not
    refuse, the way to it was down.
    """
    blocks = list(reports)
    codes = [r.status for r in blocks if r.status]
    failed = [r for r in blocks if r.action.startswith(("failed", "error"))]
    delayed = [r for r in blocks if r.action.startswith("delayed")]
    if permanent or (not temporary and failed):
        hard = [code for code in codes if code.startswith("5.")]
        if hard:
            return Bounce(Kind.HARD, hard[0])
        if codes:
            return Bounce(Kind.SOFT, codes[0])
        return Bounce(Kind.HARD, "failed")
    if temporary or delayed:
        soft = [code for code in codes if code.startswith("4.")]
        return Bounce(Kind.SOFT, soft[0] if soft else "delayed")
    hard = [code for code in codes if code.startswith("5.")]
    if hard:
        # A 5.x.x status with no Action the library knew: still a refusal.
        return Bounce(Kind.HARD, hard[0])
    return Bounce(Kind.SOFT, codes[0] if codes else UNKNOWN)


def should_pause(hard_bounces: int, threshold: int, *, paused: bool) -> bool:
    """True once the hard bounces in the window reach the threshold (0 never pauses);
    an address that is already paused is not paused again."""
    return threshold > 0 and not paused and hard_bounces >= threshold
