"""Relay address rules: generating local parts, the blocklist, tombstones, owner mailboxes."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable

from email_validator import EmailNotValidError, validate_email

from maskmail.core.errors import InvalidAddress

ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
MIN_LENGTH = 6

# Reserved role names (RFC 2142 and common system accounts) and words nobody wants in
# their address. A generated local part containing any of them is drawn again.
BLOCKLIST: frozenset[str] = frozenset(
    {
        "abuse", "admin", "administrator", "billing", "daemon", "help", "hostmaster",
        "info", "mailerdaemon", "marketing", "noc", "noreply", "nobody", "postmaster",
        "root", "sales", "security", "support", "sysadmin", "webmaster", "www",
        "anal", "anus", "arse", "bitch", "boob", "cock", "cum", "cunt", "dick", "dildo",
        "fag", "fuck", "jizz", "kike", "nazi", "nigg", "penis", "piss", "porn", "pussy",
        "rape", "sex", "shit", "slut", "spic", "tits", "twat", "vagina", "whore",
    }
)  # fmt: skip

Chooser = Callable[[str], str]
# One scan for all the words, rather than one per word.
_BLOCKED = re.compile("|".join(re.escape(word) for word in sorted(BLOCKLIST)))


def is_blocked(local_part: str) -> bool:
    """True when the local part contains a reserved or offensive word."""
    return _BLOCKED.search(local_part.lower()) is not None


def generate_local_part(length: int, choose: Chooser | None = None) -> str:
    """A random ``[a-z0-9]`` local part that passes the blocklist.

    ``choose`` picks one character from a string; tests pass a pinned one. Without it
    the whole local part is one draw from ``secrets``: a draw per character made one
    system call each, a visible share of creating an address.
    """
    if length < MIN_LENGTH:
        raise ValueError(f"address length must be at least {MIN_LENGTH}")
    while True:
        if choose is None:
            candidate = _spelled(secrets.randbelow(len(ALPHABET) ** length), length)
        else:
            candidate = "".join(choose(ALPHABET) for _ in range(length))
        if (
            not candidate.startswith("-")
            and not candidate.endswith("-")
            and not is_blocked(candidate)
        ):
            return candidate


def _spelled(number: int, length: int) -> str:
    """``number`` as ``length`` digits in ALPHABET's base: a uniform number below
    ``len(ALPHABET) ** length`` gives each digit uniform and independent of the others."""
    base = len(ALPHABET)
    digits = []
    for _ in range(length):
        number, digit = divmod(number, base)
        digits.append(ALPHABET[digit])
    return "".join(digits)


def full_address(local_part: str, domain: str, subdomain: str | None = None) -> str:
    host = f"{subdomain}.{domain}" if subdomain else domain
    return f"{local_part}@{host}"


def tombstone(address: str) -> str:
    """The SHA-256 kept forever for every address ever handed out, so none is reused."""
    return hashlib.sha256(address.lower().encode("utf-8")).hexdigest()


def normalize_mailbox(address: str) -> str:
    """Check an owner's real mailbox and return it with the domain in lower case."""
    if any(c in address for c in "\r\n\x00") or address != address.strip():
        raise InvalidAddress("a mailbox may not contain spaces or line breaks")
    try:
        parsed = validate_email(address, check_deliverability=False)
    except EmailNotValidError as exc:
        raise InvalidAddress(f"not a valid email address: {exc}") from exc
    return f"{parsed.local_part}@{parsed.domain.lower()}"
