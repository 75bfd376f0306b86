"""The admin page's list of users: each with their counts, state, limits and last
sign-in, a page at a time (reads only)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ScalarSelect, Table, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.errors import UserNotFound
from maskmail.store.accounts import UserLimits
from maskmail.store.address_counts import total_of
from maskmail.store.tables import custom_domains, mailboxes, users


@dataclass(frozen=True, slots=True)
class UserRow:
    id: int
    email: str
    created_time: int
    last_sign_in_time: int | None
    is_admin: bool
    disabled: bool
    addresses: int
    mailboxes: int
    domains: int
    # The user's own limits; None follows the server's setting.
    limits: UserLimits


def _counted(table: Table) -> ScalarSelect[int]:
    return (
        select(func.count()).select_from(table).where(table.c.user_id == users.c.id)
    ).scalar_subquery()


_ROWS = select(
    users.c.id,
    users.c.email,
    users.c.created_time,
    users.c.last_sign_in_time,
    users.c.is_admin,
    users.c.disabled,
    total_of(users.c.id),
    _counted(mailboxes),
    _counted(custom_domains),
    users.c.max_addresses,
    users.c.max_mailboxes,
    users.c.max_domains,
)


def _row(v: Sequence[Any]) -> UserRow:
    return UserRow(
        int(v[0]),
        str(v[1]),
        int(v[2]),
        None if v[3] is None else int(v[3]),
        bool(v[4]),
        bool(v[5]),
        int(v[6] or 0),
        int(v[7] or 0),
        int(v[8] or 0),
        UserLimits(v[9], v[10], v[11]),
    )


async def page(conn: AsyncConnection, *, offset: int, limit: int) -> list[UserRow]:
    """Users in the order they were added; the counts only for the page's rows."""
    rows = await conn.execute(_ROWS.order_by(users.c.id).offset(offset).limit(limit))
    return [_row(r) for r in rows]


async def one(conn: AsyncConnection, user_id: int) -> UserRow:
    row = (await conn.execute(_ROWS.where(users.c.id == user_id))).first()
    if row is None:
        raise UserNotFound(f"no user with id {user_id}")
    return _row(row)
