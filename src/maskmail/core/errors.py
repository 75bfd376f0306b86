"""The errors maskmail raises, shared by every door.

    MaskmailError
     ├── InvalidAddress      an address or field that breaks a rule
     ├── AddressNotFound     unknown, deleted, or another owner's
     │    ├── MailboxNotFound      the same, for a mailbox
     │    └── KeyNotFound          the same, for an API key (revoked ones too)
     ├── AddressTaken        a unique value that already exists (retried by the store)
     ├── LimitReached        the owner is at the address limit
     │    ├── SubdomainLimitReached  the owner already has a subdomain
     │    ├── MailboxLimitReached  at the mailbox limit
     │    └── DomainLimitReached   at the custom domain limit
     ├── Unauthorized        no usable API key
     ├── UserExists / UserNotFound
     ├── StoreUnavailable    the database cannot be reached right now
     ├── RateLimited         too many requests from one key or client
     │    └── CatchAllPaused    the owner's catch-all made all the addresses it may, for now
     ├── RelayDenied         mail for a foreign domain, or a forward that would loop
     │    ├── NotOwner          a reply through a reverse alias from anyone but its owner
     │    ├── NotYetChecked     a reply whose sender checks could not finish (try later)
     │    └── AddressDisabled   a reply through a relay address its owner switched off
     ├── Unrewritable        a reply that cannot be rewritten without leaking
     ├── DeliveryDeferred    the outbound server failed for now (retry later)
     └── DeliveryRefused     the outbound server refused for good

Each door maps these to its own replies (``http_shared/problems.py`` for HTTP,
``mail/smtp_replies.py`` for SMTP).
"""

from __future__ import annotations

from typing import Any


class MaskmailError(Exception):
    """Base class; ``message`` is safe to show to the caller."""

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details or {}


class InvalidAddress(MaskmailError):
    pass


class AddressNotFound(MaskmailError):
    pass


class AddressTaken(MaskmailError):
    pass


class LimitReached(MaskmailError):
    pass


class SubdomainLimitReached(LimitReached):
    """At most one relay subdomain per user, as in Locker."""


class MailboxLimitReached(LimitReached):
    pass


class DomainLimitReached(LimitReached):
    pass


class MailboxNotFound(AddressNotFound):
    pass


class KeyNotFound(AddressNotFound):
    """No live API key of the caller's with that id: unknown, revoked or another's."""


class Unauthorized(MaskmailError):
    pass


class UserExists(MaskmailError):
    pass


class UserNotFound(MaskmailError):
    pass


class StoreUnavailable(MaskmailError):
    pass


class ToolUnavailable(MaskmailError):
    """Work the server does for the caller (checking an OpenPGP key) did not finish in
    time: not the caller's fault, so a 503 rather than a 422."""


class RateLimited(MaskmailError):
    """Too many requests; ``retry_after`` is in whole seconds."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message, {"retry_after": retry_after})
        self.retry_after = retry_after


class CatchAllPaused(RateLimited):
    """The owner's catch-all made as many addresses on first mail as its rate or cap
    allows; mail to a new name is deferred, and the owner's dashboard says why."""


class RelayDenied(MaskmailError):
    """Mail for a domain that is not ours, or a forward that would loop."""


class NotOwner(RelayDenied):
    """Only the owner of a relay address may send through its reverse aliases."""


class NotYetChecked(RelayDenied):
    """The relay's SPF and DKIM checks of a reply could not finish (a DNS failure): the
    sender may well be the owner, so the reply is deferred, never refused for good."""


class AddressDisabled(RelayDenied):
    """The relay address is disabled, so nothing is sent through it either."""


class ReplyLoops(RelayDenied):
    """A reply to one of our own reverse aliases or to the relay address itself."""


class Unrewritable(MaskmailError):
    """A reply whose owner's address could not be removed with certainty; not sent."""


class DeliveryDeferred(MaskmailError):
    """The outbound server could not take the message now; the sender should retry."""


class DeliveryRefused(MaskmailError):
    """The outbound server refused the message for good."""
