"""The audit log of admin actions: one row written in the action's own transaction, and
the log read back newest first, a page at a time."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store.clock import now
from maskmail.store.tables import audit_log

# Column widths (store/tables.py): a longer value is cut, never refused, so that an
# action is never lost to its record.
_WIDTH = {"actor": 320, "action": 32, "target": 320, "detail": 200, "client": 64}


@dataclass(frozen=True, slots=True)
class Entry:
    """One admin action. ``actor_id`` is None for the operator at the command line."""

    id: int
    created_time: int
    actor_id: int | None
    actor: str
    action: str
    target_id: int | None
    target: str
    detail: str
    client: str


async def write(
    conn: AsyncConnection,
    *,
    actor_id: int | None,
    actor: str,
    action: str,
    target_id: int | None,
    target: str,
    detail: str = "",
    client: str = "",
) -> int:
    """Record one action; the caller holds the transaction of the action itself, so the
    row and the change are kept or lost together."""
    values = {
        "actor": actor,
        "action": action,
        "target": target,
        "detail": detail,
        "client": client,
    }
    result = await conn.execute(
        insert(audit_log)
        .values(
            created_time=now(),
            actor_id=actor_id,
            target_id=target_id,
            **{name: value[: _WIDTH[name]] for name, value in values.items()},
        )
        .returning(audit_log.c.id)
    )
    return int(result.scalar_one())


async def count(conn: AsyncConnection) -> int:
    return int(await conn.scalar(select(func.count()).select_from(audit_log)) or 0)


async def newest(conn: AsyncConnection, *, offset: int, limit: int) -> list[Entry]:
    """A page of the log, newest first (ids only grow: migration 0013's rule)."""
    rows = await conn.execute(
        select(
            audit_log.c.id,
            audit_log.c.created_time,
            audit_log.c.actor_id,
            audit_log.c.actor,
            audit_log.c.action,
            audit_log.c.target_id,
            audit_log.c.target,
            audit_log.c.detail,
            audit_log.c.client,
        )
        .order_by(audit_log.c.id.desc())
        .offset(offset)
        .limit(limit)
    )
    return [
        Entry(
            int(r[0]),
            int(r[1]),
            None if r[2] is None else int(r[2]),
            str(r[3]),
            str(r[4]),
            None if r[5] is None else int(r[5]),
            str(r[6]),
            str(r[7]),
            str(r[8]),
        )
        for r in rows
    ]
