"""A bounce against a relay address: recorded, counted, and the pause it leads to.

Above ``store.bounces`` (the bounces' rows) and ``store.addresses`` (the address's row,
its pause included), which each write their own table.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import dsn
from maskmail.core.errors import AddressNotFound
from maskmail.store import addresses as address_store
from maskmail.store import bounces
from maskmail.store.bounces import ANY_TIME, BY_ID, MADE_BEFORE, Recorded
from maskmail.store.tables import addresses

_LOCK = select(addresses.c.paused_time).where(BY_ID, MADE_BEFORE).with_for_update()


async def record_bounce(
    conn: AsyncConnection,
    address_id: int,
    bounce: dsn.Bounce,
    *,
    threshold: int,
    when: int,
    made_before: int = ANY_TIME,
) -> Recorded:
    """Record a bounce and pause the address when it reaches the threshold.

    The address row is locked first (FOR UPDATE on PostgreSQL; SQLite's BEGIN IMMEDIATE
    already serialises writers), so that concurrent bounces count one after another:
    none of them can miss the threshold, and only one of them pauses.
    """
    params = {"address_id": address_id, "made_before": made_before}
    locked = (await conn.execute(_LOCK, params)).first()
    if locked is None:
        raise AddressNotFound("no such address")
    await bounces.add(conn, address_id, bounce, when=when)
    hard = await bounces.hard_recent(conn, address_id, when)
    pause = bounce.kind is dsn.Kind.HARD and dsn.should_pause(
        hard, threshold, paused=locked.paused_time is not None
    )
    if pause:
        await address_store.pause(conn, address_id, when)
    return Recorded(hard_bounces=hard, paused=pause)
