"""Dashboard sessions: found by token hash until they expire, end, or the password changes."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.errors import UserNotFound
from maskmail.store import accounts, sessions
from maskmail.store.tables import web_sessions

pytestmark = pytest.mark.anyio


async def test_sessions_live_until_ended_or_expired(conn: AsyncConnection) -> None:
    user_id = await accounts.add_user(conn, "sam@example.com")
    await sessions.start_session(conn, user_id, "a" * 64, lifetime=3600)
    await sessions.start_session(conn, user_id, "b" * 64, lifetime=-1)
    assert await sessions.session_user(conn, "a" * 64) == (user_id, "sam@example.com", False)
    assert await sessions.session_user(conn, "b" * 64) is None
    await sessions.end_session(conn, "a" * 64)
    assert await sessions.session_user(conn, "a" * 64) is None
    # Ending one session also sweeps the expired ones.
    left = await conn.scalar(
        select(func.count()).select_from(web_sessions).where(web_sessions.c.user_id == user_id)
    )
    assert left == 0


async def test_the_session_lookup_says_whether_the_user_is_an_admin(
    conn: AsyncConnection,
) -> None:
    user_id = await accounts.add_user(conn, "ada@example.com")
    await sessions.start_session(conn, user_id, "f" * 64, lifetime=3600)
    await accounts.set_admin(conn, user_id, True)
    assert await sessions.session_user(conn, "f" * 64) == (user_id, "ada@example.com", True)
    await accounts.set_admin(conn, user_id, False)
    assert await sessions.session_user(conn, "f" * 64) == (user_id, "ada@example.com", False)


async def test_a_new_password_ends_the_other_sessions(conn: AsyncConnection) -> None:
    user_id = await accounts.add_user(conn, "tom@example.com")
    other = await accounts.add_user(conn, "uma@example.com")
    for token_hash, owner in (("c" * 64, user_id), ("d" * 64, user_id), ("e" * 64, other)):
        await sessions.start_session(conn, owner, token_hash, lifetime=3600)
    await sessions.set_password(conn, user_id, "$argon2id$x", keep="c" * 64)
    assert await sessions.session_user(conn, "c" * 64) is not None
    assert await sessions.session_user(conn, "d" * 64) is None
    assert await sessions.session_user(conn, "e" * 64) is not None
    account = await sessions.account_for_email(conn, "TOM@example.com")
    assert account is not None and account.password_hash == "$argon2id$x"
    with pytest.raises(UserNotFound):
        await sessions.set_password(conn, 2**40, "$argon2id$y")
