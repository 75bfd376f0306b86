"""The first-mail rules, for addresses made on first mail at a relay subdomain or custom
domain: which local parts may be made, what their description says, and how many new
ones one sender, and one owner, may cause."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

from maskmail.core.descriptions import clean_description
from maskmail.core.errors import AddressNotFound, CatchAllPaused, InvalidAddress

_LOCAL = re.compile(r"[a-z0-9._-]{1,64}")
# A flood of new local parts from one sender (a dictionary attack on a subdomain) is
# throttled: this many new addresses per sender per window, then a temporary refusal.
PER_SENDER = 10
WINDOW_SECONDS = 3600
# Senders remembered at most; past this the oldest are forgotten (memory stays bounded).
MAX_SENDERS = 100_000
# The local parts a certificate authority may write to, to prove control of a domain
# (CA/Browser Forum Baseline Requirements, 3.2.2.4.4): whoever held one at a user's
# subdomain could have a certificate issued for it. Catch-all never makes them.
CERTIFICATE_MAILBOXES = frozenset(
    {"admin", "administrator", "hostmaster", "postmaster", "webmaster"}
)


def catch_all_local(local: str) -> str:
    """The local part, lower-cased, if an address may be made for it: 1 to 64 of
    ``[a-z0-9._-]``; otherwise InvalidAddress."""
    lowered = local.lower()
    if not _LOCAL.fullmatch(lowered):
        raise InvalidAddress("an address made on first mail is 1 to 64 of a-z, 0-9, '.', '_', '-'")
    return lowered


def first_mail_local(local: str) -> str:
    """``catch_all_local``, for a local part catch-all may make: never one of the
    CERTIFICATE_MAILBOXES (AddressNotFound, as for any name catch-all does not make)."""
    lowered = catch_all_local(local)
    if lowered in CERTIFICATE_MAILBOXES:
        raise AddressNotFound("no such address")
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

    def allows(self, sender: str, now: float) -> bool:
        """Whether ``take`` would count one more for ``sender`` now (nothing counted):
        asked at RCPT, where nothing is made yet."""
        times = self._seen.get(sender.lower())
        return times is None or sum(t > now - self.window for t in times) < self.per_sender

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


@dataclass(frozen=True, slots=True)
class OwnerLimits:
    """How many addresses one owner's catch-all may make (MASKMAIL_FIRST_MAIL_PER_HOUR,
    MASKMAIL_FIRST_MAIL_MAX); 0 is no limit. Counted in the database, so that every
    mail-plane process sees one count."""

    per_hour: int = 0
    kept: int = 0


@dataclass(frozen=True, slots=True)
class OwnerMade:
    """An owner's addresses made on first mail: in the last hour, and still kept. Each
    is counted only up to its limit, which is all the rule needs."""

    last_hour: int
    kept: int


def pause_reason(made: OwnerMade, limits: OwnerLimits) -> str | None:
    """Why the owner's catch-all makes no new address now, said for the owner; None
    while it does."""
    if limits.kept and made.kept >= limits.kept:
        return (
            f"catch-all paused: you keep {made.kept} addresses made on first mail, the "
            f"limit; delete some you no longer use and mail to new names is taken again"
        )
    if limits.per_hour and made.last_hour >= limits.per_hour:
        return (
            f"catch-all paused: {made.last_hour} addresses were made on first mail in the "
            f"last hour, the limit; mail to new names is deferred (senders retry) until "
            f"fewer were made in the past hour"
        )
    return None


def check_owner(made: OwnerMade, limits: OwnerLimits) -> None:
    """CatchAllPaused when the owner's catch-all may make no address now."""
    reason = pause_reason(made, limits)
    if reason is not None:
        raise CatchAllPaused(reason, WINDOW_SECONDS)
