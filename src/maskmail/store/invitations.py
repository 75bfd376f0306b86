"""Invitations: made, listed, revoked, and redeemed once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.invitations import Invitation, InvitationNotFound, invalid
from maskmail.store.clock import now
from maskmail.store.tables import invitations

_COLUMNS = (
    invitations.c.id,
    invitations.c.created_time,
    invitations.c.expires_time,
    invitations.c.created_by,
    invitations.c.used_time,
    invitations.c.used_by,
    invitations.c.revoked_time,
)


def _optional(value: Any) -> int | None:
    return None if value is None else int(value)


def _record(row: Sequence[Any]) -> Invitation:
    return Invitation(
        id=int(row[0]),
        created_time=int(row[1]),
        expires_time=int(row[2]),
        created_by=_optional(row[3]),
        used_time=_optional(row[4]),
        used_by=_optional(row[5]),
        revoked_time=_optional(row[6]),
    )


async def add(
    conn: AsyncConnection, token_hash: str, *, lifetime: int, created_by: int | None
) -> Invitation:
    """A new invitation, good for ``lifetime`` seconds from now (the server's clock)."""
    created = now()
    row = (
        await conn.execute(
            insert(invitations)
            .values(
                token_hash=token_hash,
                created_time=created,
                expires_time=created + lifetime,
                created_by=created_by,
            )
            .returning(*_COLUMNS)
        )
    ).one()
    return _record(row)


async def list_invitations(conn: AsyncConnection) -> list[Invitation]:
    """Every invitation, newest first."""
    rows = await conn.execute(select(*_COLUMNS).order_by(invitations.c.id.desc()))
    return [_record(row) for row in rows]


async def get(conn: AsyncConnection, invitation_id: int) -> Invitation:
    row = (await conn.execute(select(*_COLUMNS).where(invitations.c.id == invitation_id))).first()
    if row is None:
        raise InvitationNotFound("no such invitation")
    return _record(row)


async def revoke(conn: AsyncConnection, invitation_id: int) -> Invitation:
    """The invitation stops working; revoking a used or revoked one changes nothing."""
    await conn.execute(
        update(invitations)
        .where(
            invitations.c.id == invitation_id,
            invitations.c.used_time.is_(None),
            invitations.c.revoked_time.is_(None),
        )
        .values(revoked_time=now())
    )
    return await get(conn, invitation_id)


async def is_open(conn: AsyncConnection, token_hash: str) -> bool:
    """Whether the invitation could be redeemed now (for the page the link opens)."""
    found = await conn.scalar(
        select(invitations.c.id).where(
            invitations.c.token_hash == token_hash,
            invitations.c.used_time.is_(None),
            invitations.c.revoked_time.is_(None),
            invitations.c.expires_time > now(),
        )
    )
    return found is not None


async def redeem(conn: AsyncConnection, token_hash: str) -> Invitation:
    """Spend the invitation, or InvitationInvalid when it is unknown, used, revoked or
    expired. One statement checks and spends, so of two redeems racing for one token
    exactly one changes the row (the other waits for its lock, then finds it used)."""
    row = (
        await conn.execute(
            update(invitations)
            .where(
                invitations.c.token_hash == token_hash,
                invitations.c.used_time.is_(None),
                invitations.c.revoked_time.is_(None),
                invitations.c.expires_time > now(),
            )
            .values(used_time=now())
            .returning(*_COLUMNS)
        )
    ).first()
    if row is None:
        raise invalid()
    return _record(row)


async def mark_used_by(conn: AsyncConnection, invitation_id: int, user_id: int) -> None:
    """The account the redeemed invitation made (set once the account exists)."""
    await conn.execute(
        update(invitations).where(invitations.c.id == invitation_id).values(used_by=user_id)
    )
