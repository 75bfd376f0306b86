"""Accounts made by sign-up that wait for their first mailbox to be verified.

The account's password waits here rather than on ``users``, so that the account cannot
sign in until the mailbox is proved; ``finish`` hands it over once.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store.clock import now
from maskmail.store.tables import pending_signups, users


@dataclass(frozen=True, slots=True)
class Pending:
    user_id: int
    mailbox_id: int
    created_time: int


_COLUMNS = (pending_signups.c.user_id, pending_signups.c.mailbox_id, pending_signups.c.created_time)


async def add(
    conn: AsyncConnection, user_id: int, mailbox_id: int, *, ticket_hash: str, password_hash: str
) -> None:
    await conn.execute(
        insert(pending_signups).values(
            user_id=user_id,
            mailbox_id=mailbox_id,
            ticket_hash=ticket_hash,
            password_hash=password_hash,
            created_time=now(),
        )
    )


async def by_ticket(conn: AsyncConnection, ticket_hash: str) -> Pending | None:
    row = (
        await conn.execute(select(*_COLUMNS).where(pending_signups.c.ticket_hash == ticket_hash))
    ).first()
    return None if row is None else Pending(int(row[0]), int(row[1]), int(row[2]))


async def by_mailbox(conn: AsyncConnection, mailbox_id: int) -> Pending | None:
    row = (
        await conn.execute(select(*_COLUMNS).where(pending_signups.c.mailbox_id == mailbox_id))
    ).first()
    return None if row is None else Pending(int(row[0]), int(row[1]), int(row[2]))


async def by_email(conn: AsyncConnection, email: str) -> Pending | None:
    """The waiting sign-up of the account named ``email`` (in any case), if it waits."""
    row = (
        await conn.execute(
            select(*_COLUMNS)
            .select_from(pending_signups.join(users, users.c.id == pending_signups.c.user_id))
            .where(users.c.email_key == email.lower())
        )
    ).first()
    return None if row is None else Pending(int(row[0]), int(row[1]), int(row[2]))


async def finish(conn: AsyncConnection, user_id: int) -> str | None:
    """Remove the waiting sign-up and give its password hash, once; None when there is
    none (it was finished already, or replaced)."""
    row = (
        await conn.execute(
            delete(pending_signups)
            .where(pending_signups.c.user_id == user_id)
            .returning(pending_signups.c.password_hash)
        )
    ).first()
    return None if row is None else str(row[0])
