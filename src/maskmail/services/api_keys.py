"""A user's API keys, named: made (the key shown once), listed, revoked. One workflow for
the dashboard's keys page, ``GET``/``DELETE /v3/relay/keys`` and ``maskmail key``.

A name is a label its owner reads, so that "laptop" and "Bitwarden" can be told apart;
two keys may carry the same name (the prefix and the creation time still tell them
apart, and refusing one would tell nothing the owner does not see in the list).
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.descriptions import is_control
from maskmail.core.errors import InvalidAddress, KeyNotFound
from maskmail.core.records import MAX_ID
from maskmail.core.text import unstorable
from maskmail.store import accounts
from maskmail.store.accounts import KeyInfo

NAME_MAX = 64


def key_name(text: str | None) -> str | None:
    """The name to store: trimmed; None when blank (a name is optional). Control
    characters (a line break among them) and names over ``NAME_MAX`` characters are
    refused with an error naming the field, never cut: the owner typed the name."""
    name = (text or "").strip()
    if not name:
        return None
    why = unstorable(name)
    if why is None and any(is_control(c) for c in name):
        why = "may not contain control characters such as line breaks"
    if why is None and len(name) > NAME_MAX:
        why = f"may have at most {NAME_MAX} characters"
    if why is not None:
        raise InvalidAddress(f"the key's name {why}", {"field": "name"})
    return name


async def create(conn: AsyncConnection, user_id: int, name: str | None = None) -> str:
    """A new key for the user under ``name`` (checked by ``key_name``): the plaintext,
    returned this once and never stored."""
    return await accounts.create_key(conn, user_id, name=key_name(name))


async def listed(conn: AsyncConnection, user_id: int) -> list[KeyInfo]:
    """The user's live keys, newest first: name, prefix, made and last used."""
    return await accounts.live_keys(conn, user_id)


async def revoke(conn: AsyncConnection, user_id: int, key_id: int) -> None:
    """Revoke one of the user's live keys at once; any other id (unknown, revoked, or
    another user's) is the same KeyNotFound, so that no one learns which keys exist."""
    if not (1 <= key_id <= MAX_ID and await accounts.revoke_own_key(conn, user_id, key_id)):
        raise KeyNotFound("no such key")
