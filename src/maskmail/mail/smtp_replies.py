"""Every SMTP line the mail plane answers with, and the table from errors to lines.

The sibling of ``api/errors.py``: core errors carry no SMTP code; this door adds them.
"""

from __future__ import annotations

from maskmail.core.errors import (
    AddressDisabled,
    AddressNotFound,
    CatchAllPaused,
    DeliveryDeferred,
    DeliveryRefused,
    InvalidAddress,
    MaskmailError,
    NotOwner,
    NotYetChecked,
    RateLimited,
    RelayDenied,
    ReplyLoops,
    StoreUnavailable,
    Unrewritable,
)

SENDER_OK = "250 2.1.0 Sender OK"
RECIPIENT_OK = "250 2.1.5 Recipient OK"
ACCEPTED = "250 2.0.0 Message accepted"
# One relay recipient per transaction, so each gets its own true answer after DATA.
ONE_RECIPIENT = "452 4.5.3 One recipient per message; send the others in a new transaction"
BAD_SENDER = "501 5.1.7 Bad sender address syntax"
TOO_MANY_CONNECTIONS = "421 4.7.0 Too many connections; try again later"
TOO_MANY_FROM_CLIENT = "421 4.7.0 Too many connections from your address; try again later"
SHUTTING_DOWN = "421 4.3.2 Restarting; connect again"
IDLE_TIMEOUT = "421 4.4.2 Idle for too long; closing the connection"
TRY_LATER = "451 4.3.0 Temporary failure; try again later"

_TABLE: dict[type[MaskmailError], str] = {
    InvalidAddress: "501 5.1.3 Bad recipient address syntax",
    AddressNotFound: "550 5.1.1 No such user here",
    RelayDenied: "550 5.7.1 Relaying denied",
    RateLimited: "450 4.7.1 Too many new addresses from this sender; try again later",
    # The owner's catch-all is at its rate or cap: the reason is the owner's, not told.
    CatchAllPaused: "450 4.7.1 No new addresses are made here for now; try again later",
    StoreUnavailable: "451 4.3.0 Temporary failure; try again later",
    DeliveryDeferred: "451 4.4.1 Could not deliver right now; try again later",
    DeliveryRefused: "550 5.0.0 The destination refused this message",
    Unrewritable: "550 5.6.0 The reply could not be rewritten without revealing your address",
}
# These carry a reason for the owner, written by core (never by a client).
_WITH_REASON: dict[type[MaskmailError], str] = {
    NotYetChecked: "451 4.7.0",
    NotOwner: "550 5.7.1",
    AddressDisabled: "550 5.7.1",
    ReplyLoops: "550 5.7.1",
}


def reply_for(error: MaskmailError) -> str:
    """The SMTP line for a core error, looked up along its class hierarchy."""
    for cls in type(error).__mro__:
        prefix = _WITH_REASON.get(cls)
        if prefix is not None:
            return f"{prefix} {' '.join(error.message.split())}"
        line = _TABLE.get(cls)
        if line is not None:
            return line
    return TRY_LATER
