"""Password reset links: the SHA-256 of each mailed token, its user and its expiry.

A link works once: using it deletes its row in the statement that reads it, so of two
uses at the same time exactly one finds the row (PostgreSQL makes the second DELETE wait
for the first to commit and then finds nothing; SQLite runs one writer at a time).
"""

from __future__ import annotations

from sqlalchemy import delete, false, func, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store.clock import now
from maskmail.store.tables import password_resets, users


async def add(
    conn: AsyncConnection, user_id: int, token_hash: str, *, lifetime: int, most: int
) -> bool:
    """Keep a new link's token hash for ``lifetime`` seconds; False (and nothing kept)
    when the user already has ``most`` live links. The user's expired links go first."""
    started = now()
    await conn.execute(
        delete(password_resets).where(
            password_resets.c.user_id == user_id, password_resets.c.expires_time <= started
        )
    )
    live = (
        await conn.execute(
            select(func.count())
            .select_from(password_resets)
            .where(password_resets.c.user_id == user_id)
        )
    ).scalar_one()
    if live >= most:
        return False
    await conn.execute(
        insert(password_resets).values(
            token_hash=token_hash,
            user_id=user_id,
            created_time=started,
            expires_time=started + lifetime,
        )
    )
    return True


async def user_of(conn: AsyncConnection, token_hash: str) -> int | None:
    """The user of a live link, without using it (the link's page shows its form)."""
    found = (
        await conn.execute(
            select(password_resets.c.user_id).where(
                password_resets.c.token_hash == token_hash,
                password_resets.c.expires_time > now(),
            )
        )
    ).first()
    return None if found is None else int(found[0])


async def use(conn: AsyncConnection, token_hash: str) -> int | None:
    """Burn a live link and every other link of its user; the user, or None when the
    link is unknown, used or expired (on this server's clock)."""
    taken = (
        await conn.execute(
            delete(password_resets)
            .where(
                password_resets.c.token_hash == token_hash,
                password_resets.c.expires_time > now(),
            )
            .returning(password_resets.c.user_id)
        )
    ).first()
    if taken is None:
        return None
    user_id = int(taken[0])
    await conn.execute(delete(password_resets).where(password_resets.c.user_id == user_id))
    return user_id


async def user_for_reset(conn: AsyncConnection, email: str) -> int | None:
    """The user a reset asked for by ``email`` (any case) may go to, or None: no such
    account, or a disabled one."""
    query = select(users.c.id).where(users.c.email_key == email.lower())
    # Disabling accounts is another change's column: honoured once it exists.
    if "disabled" in users.c:
        query = query.where(users.c.disabled == false())
    found = await conn.scalar(query)
    return None if found is None else int(found)
