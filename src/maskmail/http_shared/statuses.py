"""The HTTP status and code of each of our errors: one answer for both doors (the API
writes them in its bodies, the dashboard shows the status)."""

from __future__ import annotations

from maskmail.core import errors

# Looked up along the exception's MRO, so a subclass inherits its parent's answer.
STATUS: dict[type[errors.MaskmailError], tuple[int, str]] = {
    errors.Unauthorized: (401, "unauthorized"),
    errors.LimitReached: (403, "address_limit_reached"),
    errors.SubdomainLimitReached: (403, "subdomain_limit_reached"),
    errors.MailboxLimitReached: (403, "mailbox_limit_reached"),
    errors.DomainLimitReached: (403, "domain_limit_reached"),
    errors.AddressNotFound: (404, "not_found"),
    errors.InvalidAddress: (422, "validation_error"),
    errors.RateLimited: (429, "rate_limited"),
    errors.StoreUnavailable: (503, "unavailable"),
    errors.ToolUnavailable: (503, "unavailable"),
    errors.AddressTaken: (503, "unavailable"),
    # Only the verification message of a new mailbox is sent from the API.
    errors.DeliveryDeferred: (503, "unavailable"),
    errors.DeliveryRefused: (422, "validation_error"),
}


def status_of(exc: errors.MaskmailError) -> int:
    """The status ``exc`` answers, inherited along its class's parents; 500 if none."""
    return next((STATUS[cls][0] for cls in type(exc).__mro__ if cls in STATUS), 500)
