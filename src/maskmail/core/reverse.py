"""Reverse aliases: the unguessable address at the relay domain that stands for one sender."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable

PREFIX = "r."
RANDOM_BYTES = 15  # 120 bits, 24 base32 characters

TokenSource = Callable[[int], bytes]


def generate_alias_local(token: TokenSource = secrets.token_bytes) -> str:
    """A fresh local part such as ``r.mfrggzdfmztwq2lknnwg23tpob``.

    The dot can never appear in a relay address's ``[a-z0-9]`` local part, so the two
    kinds never collide. ``token`` is a parameter so that tests can pin it.
    """
    return PREFIX + base64.b32encode(token(RANDOM_BYTES)).decode("ascii").lower()


def is_alias_local(local: str) -> bool:
    return local.lower().startswith(PREFIX)


def sender_key(sender: str) -> str:
    """The form a sender is stored in, so that one person maps to one reverse alias.

    Mail systems treat the domain case-insensitively and, in practice, the local part
    too; lower-casing the whole address keeps ``Alice@X`` and ``alice@x`` together.
    """
    return sender.strip().lower()


def alias_address(alias: str, domain: str) -> str:
    """A reverse alias as the address it is, ``r.…@domain``: written in one place, as
    ``core.addresses.full_address`` is for relay addresses."""
    return f"{alias}@{domain}"
