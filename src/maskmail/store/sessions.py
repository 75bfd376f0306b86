"""Dashboard sign-in: users' password hashes and their server-side sessions.

A session is found by the SHA-256 of the cookie's token; the token itself is never
stored, so a copy of the database signs no one in.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import bindparam, delete, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.errors import UserNotFound
from maskmail.store import accounts
from maskmail.store.clock import now
from maskmail.store.tables import users, web_sessions


@dataclass(frozen=True, slots=True)
class Account:
    user_id: int
    email: str
    password_hash: str | None


async def account_for_email(conn: AsyncConnection, email: str) -> Account | None:
    """The account that signs in with ``email``; None for none, or a disabled user's."""
    row = (
        await conn.execute(
            select(users.c.id, users.c.email, users.c.password_hash).where(
                users.c.email_key == email.lower(), users.c.disabled.is_(False)
            )
        )
    ).first()
    return None if row is None else Account(int(row[0]), str(row[1]), row[2])


async def account_for_user(conn: AsyncConnection, user_id: int) -> Account:
    row = (
        await conn.execute(
            select(users.c.id, users.c.email, users.c.password_hash).where(users.c.id == user_id)
        )
    ).first()
    if row is None:
        raise UserNotFound(f"no user with id {user_id}")
    return Account(int(row[0]), str(row[1]), row[2])


async def set_password(
    conn: AsyncConnection, user_id: int, password_hash: str, *, keep: str | None = None
) -> None:
    """Store the new hash and end every session of the user but ``keep`` (a token hash)."""
    await accounts.set_password_hash(conn, user_id, password_hash)
    ending = delete(web_sessions).where(web_sessions.c.user_id == user_id)
    if keep is not None:
        ending = ending.where(web_sessions.c.token_hash != keep)
    await conn.execute(ending)


async def start_session(
    conn: AsyncConnection, user_id: int, token_hash: str, *, lifetime: int
) -> None:
    created = now()
    await conn.execute(
        insert(web_sessions).values(
            user_id=user_id,
            token_hash=token_hash,
            created_time=created,
            expires_time=created + lifetime,
        )
    )
    await accounts.mark_signed_in(conn, user_id, created)


_SESSION_USER = (
    select(users.c.id, users.c.email, users.c.is_admin)
    .select_from(web_sessions.join(users, users.c.id == web_sessions.c.user_id))
    .where(
        web_sessions.c.token_hash == bindparam("token_hash"),
        web_sessions.c.expires_time > bindparam("now"),
        users.c.disabled.is_(False),
    )
)


async def session_user(conn: AsyncConnection, token_hash: str) -> tuple[int, str, bool] | None:
    """The user id, mailbox and whether they are an admin, of a live session, read on
    every request in one statement: ending a session, or disabling its user, takes
    effect at once."""
    row = (await conn.execute(_SESSION_USER, {"token_hash": token_hash, "now": now()})).first()
    return None if row is None else (int(row[0]), str(row[1]), bool(row[2]))


async def end_session(conn: AsyncConnection, token_hash: str) -> None:
    """Sign out; expired sessions of anyone go at the same time."""
    await conn.execute(
        delete(web_sessions).where(
            (web_sessions.c.token_hash == token_hash) | (web_sessions.c.expires_time <= now())
        )
    )


async def end_all(conn: AsyncConnection, user_id: int) -> None:
    """End every session of the user (the admin page disables them)."""
    await conn.execute(delete(web_sessions).where(web_sessions.c.user_id == user_id))
