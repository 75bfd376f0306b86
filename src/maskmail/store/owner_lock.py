"""The owner's row, locked: every change that reads an owner's rows, checks a limit or a
name and then writes takes it first, so that two such changes of one owner run one after
the other (in any process sharing the database)."""

from __future__ import annotations

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store.driver import Driver, Statement, as_driver
from maskmail.store.tables import users

# FOR UPDATE on PostgreSQL; SQLite has none, and needs none: its write transactions
# (BEGIN IMMEDIATE) run one at a time already.
_LOCK = Statement.from_core(
    select(users.c.id).where(users.c.id == bindparam("user_id")).with_for_update(), "user_id"
)


async def lock_owner(conn: AsyncConnection | Driver, user_id: int) -> bool:
    """Take the owner's row until the transaction ends; False when there is no such
    owner. Two adds never both pass a limit, a delete and a new default never leave the
    owner without a default mailbox, and no address is made on a subdomain name being
    renamed."""
    return bool(await (await as_driver(conn)).rows(_LOCK, user_id))
