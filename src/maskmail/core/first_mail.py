"""Addresses made on first mail at a relay subdomain: which local parts may be made, what
their description says, and how many new ones one sender may cause."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

from maskmail.core.descriptions import clean_description
from maskmail.core.errors import InvalidAddress

_LOCAL = re.compile(r"[a-z0-9._-]{1,64}")
# A flood of new local parts from one sender (a dictionary attack on a subdomain) is
# throttled: this many new addresses per sender per window, then a temporary refusal.
PER_SENDER = 10
WINDOW_SECONDS = 3600
# Senders remembered at most; past this the oldest are forgotten (memory stays bounded).
MAX_SENDERS = 100_000


def catch_all_local(local: str) -> str:
    """The local part, lower-cased, if an address may be made for it: 1 to 64 of
    ``[a-z0-9._-]``; otherwise InvalidAddress."""
    lowered = local.lower()
    if not _LOCAL.fullmatch(lowered):
        raise InvalidAddress("an address made on first mail is 1 to 64 of a-z, 0-9, '.', '_', '-'")
    return lowered


def first_mail_description(sender: str) -> str:
    """Who first wrote to the address, cut to the description limit."""
    return clean_description(f"first mail from {sender}" if sender else "first mail: a bounce")


@dataclass
class FloodGuard:
    """Counts the new addresses each envelope sender caused in the last window.

    In memory, per process: the SMTP server and the policy service share one. The clock
    is the caller's (``now`` in seconds), so the rule stays pure.
    """

    per_sender: int = PER_SENDER
    window: float = WINDOW_SECONDS
    _seen: dict[str, deque[float]] = field(default_factory=dict)

    def take(self, sender: str, now: float) -> bool:
        """Count one new address for ``sender``; False (nothing counted) past the limit."""
        key = sender.lower()
        times = self._seen.get(key)
        if times is None:
            if len(self._seen) >= MAX_SENDERS:
                self._seen.pop(next(iter(self._seen)))
            times = self._seen[key] = deque()
        while times and times[0] <= now - self.window:
            times.popleft()
        if len(times) >= self.per_sender:
            return False
        times.append(now)
        return True

    def give_back(self, sender: str, now: float) -> None:
        """Uncount a ``take`` whose address was not made after all."""
        times = self._seen.get(sender.lower())
        if times and now in times:
            times.remove(now)
