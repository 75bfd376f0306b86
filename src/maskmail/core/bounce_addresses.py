"""Signed bounce addresses: the envelope sender of every forward, at the relay domain.

A bounce that comes back names the relay address it belongs to (and, for a message sent
to several mailboxes, the mailbox its copy went to) and proves, by an HMAC over that and
the day it was sent, that we made it; forged bounces (backscatter) fail.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field

PREFIX = "bounce"
SIGNATURE_HEX = 16  # 64 bits: guessing one takes 2^63 tries on average
DAY = 86_400


@dataclass(frozen=True, slots=True)
class BounceOf:
    """What a bounce address stands for; ``mailbox_id`` only for one copy of several."""

    address_id: int
    mailbox_id: int | None = None
    # The day (since the epoch) the address was signed: a row made after that day has
    # the id of one that was gone before, and the bounce is not its.
    day: int = field(default=0, compare=False)

    @property
    def made_before(self) -> int:
        """The time before which the address and mailbox it names were made."""
        return (self.day + 1) * DAY

    @property
    def tag(self) -> str:
        return (
            str(self.address_id)
            if self.mailbox_id is None
            else f"{self.address_id}-{self.mailbox_id}"
        )


def _signature(tag: str, day: int, secret: bytes) -> str:
    message = f"{tag}.{day}".encode("ascii")
    return hmac.new(secret, message, hashlib.sha256).hexdigest()[:SIGNATURE_HEX]


def bounce_address(
    address_id: int, now: int, secret: bytes, domain: str, mailbox_id: int | None = None
) -> str:
    day = now // DAY
    tag = BounceOf(address_id, mailbox_id).tag
    return f"{PREFIX}+{tag}.{day}.{_signature(tag, day, secret)}@{domain}"


def _number(raw: str) -> int | None:
    return int(raw) if raw.isdecimal() and raw.isascii() else None


def bounced(local: str, now: int, secret: bytes, max_age_days: int = 7) -> BounceOf | None:
    """What a bounce local part stands for, or None if forged or expired."""
    tag, plus, rest = local.lower().partition("+")
    parts = rest.split(".")
    if tag != PREFIX or not plus or len(parts) != 3:
        return None
    raw_tag, raw_day, signature = parts
    raw_address, dash, raw_mailbox = raw_tag.partition("-")
    address_id, day = _number(raw_address), _number(raw_day)
    mailbox_id = _number(raw_mailbox) if dash else None
    if address_id is None or day is None or (dash and mailbox_id is None):
        return None
    if not 0 <= now // DAY - day <= max_age_days:
        return None
    found = BounceOf(address_id, mailbox_id, day)
    if not hmac.compare_digest(signature, _signature(found.tag, day, secret)):
        return None
    return found
