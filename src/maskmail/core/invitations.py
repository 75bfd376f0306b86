"""Invitation rules: the single-use sign-up links of ``MASKMAIL_SIGNUP=invite``.

A token is random (``secrets``), recognisable by its prefix, and only its SHA-256 is
stored; how long one stays good is written like ``7d``, ``12h`` or ``30m``.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlencode

from maskmail.core.errors import AddressNotFound, InvalidAddress

PREFIX = "mmi_"
# A token is 47 characters; a longer value is refused before it is hashed.
MAX_TOKEN_CHARS = 128
DEFAULT_SECONDS = 7 * 86_400
MIN_SECONDS = 60
MAX_SECONDS = 90 * 86_400
_UNITS = {"m": 60, "h": 3600, "d": 86_400, "w": 7 * 86_400}
_DURATION = re.compile(r"^\s*(\d{1,6})\s*([mhdw])\s*$", re.IGNORECASE)


class InvitationInvalid(InvalidAddress):
    """An invitation that is unknown, used, revoked or expired: one answer for all four,
    so that the answer tells nothing of which."""


class InvitationNotFound(AddressNotFound):
    """No invitation with that id (revoking)."""


class State(StrEnum):
    OPEN = "open"
    USED = "used"
    REVOKED = "revoked"
    EXPIRED = "expired"


@dataclass(frozen=True, slots=True)
class Invitation:
    """One invitation as the operator and the admin page see it (never its token)."""

    id: int
    created_time: int
    expires_time: int
    # The admin who made it; None: the operator, on the command line.
    created_by: int | None
    used_time: int | None
    used_by: int | None
    revoked_time: int | None

    def state(self, now: int) -> State:
        if self.used_time is not None:
            return State.USED
        if self.revoked_time is not None:
            return State.REVOKED
        if self.expires_time <= now:
            return State.EXPIRED
        return State.OPEN


def new_token() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def invalid() -> InvitationInvalid:
    return InvitationInvalid(
        "this invitation is not valid: it may have been used, revoked or expired; "
        "ask for a new one",
        {"field": "invite"},
    )


def check_token(token: str) -> str:
    """The token as typed, stripped; anything no invitation could be is invalid."""
    token = token.strip()
    if not token.startswith(PREFIX) or len(token) > MAX_TOKEN_CHARS:
        raise invalid()
    return token


def parse_duration(text: str) -> int:
    """Seconds from ``30m``, ``12h``, ``7d`` or ``2w``, between a minute and 90 days."""
    found = _DURATION.match(text)
    if found is None:
        raise InvalidAddress(
            f"not a duration: {text!r}; write a number and a unit, such as 7d, 12h or 30m",
            {"field": "expires"},
        )
    return check_lifetime(int(found.group(1)) * _UNITS[found.group(2).lower()])


def check_lifetime(seconds: int) -> int:
    """``seconds`` when an invitation may live that long: a minute to 90 days."""
    if not MIN_SECONDS <= seconds <= MAX_SECONDS:
        raise InvalidAddress(
            "an invitation must expire between one minute and 90 days from now",
            {"field": "expires"},
        )
    return seconds


SIGN_UP_PATH = "/sign-up"


def link(base_url: str, token: str) -> str:
    """The link that opens the sign-up page with the invitation filled in; ``base_url``
    is where the dashboard is served (scheme, host and any path prefix)."""
    return f"{base_url.rstrip('/')}{SIGN_UP_PATH}?{urlencode({'invite': token})}"
