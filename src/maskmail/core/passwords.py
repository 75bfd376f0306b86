"""Dashboard passwords: argon2id hashes (argon2-cffi's defaults), and what a password
must be."""

from __future__ import annotations

from functools import lru_cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from maskmail.core.errors import MaskmailError

MIN_LENGTH = 10
MAX_LENGTH = 1024
_hasher = PasswordHasher()


@lru_cache(maxsize=1)
def _dummy() -> str:
    """Verified when the account has no password or does not exist, so that the time
    taken does not tell which part of a sign-in was wrong; made on first use, not at
    import."""
    return _hasher.hash("not a password anyone has")


class WeakPassword(MaskmailError):
    """A password that is too short, too long or not one line."""


def check(password: str) -> str:
    """The password, or WeakPassword saying what is wrong with it."""
    if len(password) < MIN_LENGTH:
        raise WeakPassword(f"the password must have at least {MIN_LENGTH} characters")
    if len(password) > MAX_LENGTH:
        raise WeakPassword(f"the password may have at most {MAX_LENGTH} characters")
    if any(c in password for c in "\r\n\x00"):
        raise WeakPassword("the password must be one line")
    return password


def hash_password(password: str) -> str:
    return _hasher.hash(check(password))


def verify(stored: str | None, password: str) -> bool:
    """True when ``password`` matches ``stored``; a missing hash costs the same time."""
    try:
        return _hasher.verify(stored or _dummy(), password) and stored is not None
    except (VerificationError, InvalidHashError):
        return False
