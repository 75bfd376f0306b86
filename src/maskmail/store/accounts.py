"""Users and their API keys."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.errors import UserExists, UserNotFound
from maskmail.store.clock import now
from maskmail.store.tables import api_keys, users


@dataclass(frozen=True, slots=True)
class Owner:
    """The caller behind an API key."""

    user_id: int
    key_id: int


async def add_user(conn: AsyncConnection, email: str) -> int:
    try:
        async with conn.begin_nested():
            result = await conn.execute(
                insert(users)
                .values(email=email, email_key=email.lower(), created_time=now())
                .returning(users.c.id)
            )
    except IntegrityError as exc:
        raise UserExists(f"a user with that email already exists: {email}") from exc
    return int(result.scalar_one())


async def user_id_for_email(conn: AsyncConnection, email: str) -> int:
    found = await conn.scalar(select(users.c.id).where(users.c.email_key == email.lower()))
    if found is None:
        raise UserNotFound(f"no such user: {email}")
    return int(found)


async def user_email(conn: AsyncConnection, user_id: int) -> str:
    found = await conn.scalar(select(users.c.email).where(users.c.id == user_id))
    if found is None:
        raise UserNotFound(f"no user with id {user_id}")
    return str(found)


async def set_show_name(conn: AsyncConnection, email: str, show: bool) -> None:
    """The user's choice: send their display name with replies, or only the address."""
    result = await conn.execute(
        update(users).where(users.c.email_key == email.lower()).values(show_name=show)
    )
    if result.rowcount != 1:
        raise UserNotFound(f"no such user: {email}")


async def count_users(conn: AsyncConnection) -> int:
    return int(await conn.scalar(select(func.count()).select_from(users)) or 0)


async def add_key(conn: AsyncConnection, user_id: int, key_hash: str) -> int:
    result = await conn.execute(
        insert(api_keys)
        .values(user_id=user_id, key_hash=key_hash, created_time=now())
        .returning(api_keys.c.id)
    )
    return int(result.scalar_one())


async def revoke_key(conn: AsyncConnection, key_hash: str) -> bool:
    """Revoke the key; False when no live key has that hash."""
    result = await conn.execute(
        update(api_keys)
        .where(api_keys.c.key_hash == key_hash, api_keys.c.revoked_time.is_(None))
        .values(revoked_time=now())
    )
    return result.rowcount == 1


# Built once; every request runs it, and never from a cache: a revoked key stops at once.
_OWNER_FOR_KEY = select(api_keys.c.user_id, api_keys.c.id).where(
    api_keys.c.key_hash == bindparam("key_hash"), api_keys.c.revoked_time.is_(None)
)


async def owner_for_key(conn: AsyncConnection, key_hash: str) -> Owner | None:
    row = (await conn.execute(_OWNER_FOR_KEY, {"key_hash": key_hash})).first()
    return None if row is None else Owner(user_id=int(row[0]), key_id=int(row[1]))
