"""A user's dashboard password: checked, hashed and stored, the user's sessions ended.
The workflow over ``store/accounts.py`` (the same concept, the table's one writer), for
the dashboard's password page and ``maskmail user password``."""

from __future__ import annotations

import asyncio

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import passwords
from maskmail.store import sessions


async def hash_new(password: str) -> str:
    """The stored form of a new password. A password that breaks the rules raises
    ``passwords.WeakPassword`` first.

    Hashed in a thread: argon2id is made to take CPU time, and the event loop serves
    other requests meanwhile. A caller that must spend something only once the password
    is known good (a reset link, a sign-up) hashes first, then stores with
    ``store_hashed``.
    """
    return await asyncio.to_thread(passwords.hash_password, password)


async def store_hashed(
    conn: AsyncConnection, user_id: int, hashed: str, *, keep: str | None = None
) -> None:
    """Give the user the password ``hashed`` (from ``hash_new``) and sign out every session
    of theirs but ``keep`` (the token hash of the session that changed it, if any)."""
    await sessions.set_password(conn, user_id, hashed, keep=keep)


async def set_password(
    conn: AsyncConnection, user_id: int, password: str, *, keep: str | None = None
) -> None:
    """Give the user ``password`` and sign out every session of theirs but ``keep``;
    nothing is written if the password breaks the rules."""
    await store_hashed(conn, user_id, await hash_new(password), keep=keep)
