"""Sign-up rules: who may join (``MASKMAIL_SIGNUP``), the sign-up page's ticket, and the
message an existing account gets when someone signs up with its address."""

from __future__ import annotations

import secrets
from enum import StrEnum

from maskmail.core.errors import AddressNotFound, InvalidAddress, RateLimited
from maskmail.core.mailboxes import notice


class Mode(StrEnum):
    CLOSED = "closed"
    INVITE = "invite"
    OPEN = "open"


class SignUpClosed(AddressNotFound):
    """Sign-up is closed on this server: the page is not there."""


def closed() -> SignUpClosed:
    return SignUpClosed("sign-up is closed on this server; ask its administrator for an account")


def new_ticket() -> str:
    """What the page after sign-up carries to its code form: random, whether or not an
    account was made, so that the page looks the same either way."""
    return secrets.token_urlsafe(32)


def wrong_code() -> InvalidAddress:
    """One answer for a wrong or expired code and for a ticket that names nothing."""
    return InvalidAddress("wrong or expired code", {"field": "code"})


def too_many_codes(retry_after: int) -> RateLimited:
    return RateLimited("too many codes were tried; wait an hour and sign up again", retry_after)


def taken_notice(*, to: str, sender: str, sign_in: str, when: float) -> bytes:
    """Sent, instead of a verification message, to an address that has an account: the
    page the person signing up sees is the same, so it tells nobody who has an account."""
    return notice(
        to=to,
        sender=sender,
        subject="Someone tried to sign up to maskmail with your address",
        when=when,
        text="Someone (perhaps you) tried to make a maskmail account with this address, "
        "but you have one already, so nothing was changed.\n\n"
        f"If it was you, sign in here instead:\n\n{sign_in}\n\n"
        "If it was not you, you need not do anything.\n",
    )
