"""The owner's row, locked: every change that reads an owner's rows, checks a limit or a
name and then writes takes it first, so that two such changes of one owner run one after
the other (in any process sharing the database)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, bindparam, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store.driver import Driver, as_driver
from maskmail.store.statements import Statement
from maskmail.store.tables import users


def locking(query: Select[Any]) -> Select[Any]:
    """``query``, which reads the owner's row, taking it as ``lock_owner`` does: for a
    statement that locks and reads in one round trip. FOR UPDATE on PostgreSQL; SQLite
    has none, and needs none: its write transactions (BEGIN IMMEDIATE) run one at a time
    already."""
    return query.with_for_update(of=users)


_LOCK = Statement.from_core(
    locking(select(users.c.id).where(users.c.id == bindparam("user_id"))), "user_id"
)


async def lock_owner(conn: AsyncConnection | Driver, user_id: int) -> bool:
    """Take the owner's row until the transaction ends; False when there is no such
    owner. Two adds never both pass a limit, a delete and a new default never leave the
    owner without a default mailbox, and no address is made on a subdomain name being
    renamed."""
    return bool(await (await as_driver(conn)).rows(_LOCK, user_id))
