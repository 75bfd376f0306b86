"""A user's dashboard password: checked, hashed and stored, the user's sessions ended.
The workflow over ``store/accounts.py`` (the same concept, the table's one writer), for
the dashboard's password page and ``maskmail user password``."""

from __future__ import annotations

import asyncio

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import passwords
from maskmail.store import sessions


async def set_password(
    conn: AsyncConnection, user_id: int, password: str, *, keep: str | None = None
) -> None:
    """Give the user ``password`` and sign out every session of theirs but ``keep`` (the
    token hash of the session that changed it, if any). A password that breaks the rules
    raises ``passwords.WeakPassword`` before anything is written.

    Hashed in a thread: argon2id is made to take CPU time, and the event loop serves
    other requests meanwhile.
    """
    hashed = await asyncio.to_thread(passwords.hash_password, password)
    await sessions.set_password(conn, user_id, hashed, keep=keep)
