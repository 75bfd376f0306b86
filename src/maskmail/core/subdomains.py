"""Relay subdomain rules (Locker's contract): the name's shape, the blocklist, the tombstone."""

from __future__ import annotations

import re
from dataclasses import dataclass

from maskmail.core.addresses import is_blocked, tombstone
from maskmail.core.errors import InvalidAddress

MIN_LENGTH = 3
MAX_LENGTH = 63
# One DNS label of [a-z0-9-], neither starting nor ending with a hyphen.
NAME_PATTERN = r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$"
_LABEL = re.compile(NAME_PATTERN.strip("^$"))


def check_subdomain(name: str) -> str:
    """The name if it may be claimed as written; otherwise InvalidAddress saying why.

    Upper case is refused rather than folded, as Locker does: what the user typed is
    what their addresses will show.
    """
    detail = {"field": "subdomain"}
    if not MIN_LENGTH <= len(name) <= MAX_LENGTH:
        raise InvalidAddress(f"a subdomain is {MIN_LENGTH} to {MAX_LENGTH} characters long", detail)
    if not _LABEL.fullmatch(name):
        raise InvalidAddress(
            "a subdomain is lower-case letters, digits and '-', not starting or ending with '-'",
            detail,
        )
    if is_blocked(name):
        raise InvalidAddress("this subdomain is not available", detail)
    return name


def subdomain_tombstone(name: str, domain: str) -> str:
    """The hash kept forever once a subdomain was claimed, so it is never reissued.

    It is the address tombstone of the host name: a host has no '@', so it never equals
    an address's.
    """
    return tombstone(f"{name}.{domain}")


@dataclass(frozen=True, slots=True)
class Subdomain:
    id: int
    user_id: int
    subdomain: str
    catch_all: bool
    created_time: int
