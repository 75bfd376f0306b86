"""The dashboard's view of an owner's addresses: newest first, optionally filtered by a
piece of the address or the description."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.records import RelayAddress
from maskmail.store import address_counts
from maskmail.store.addresses import ADDRESS_COLUMNS, FULL_ADDRESS, record
from maskmail.store.tables import addresses


def _pattern(text: str) -> str:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


async def search_addresses(
    conn: AsyncConnection, user_id: int, text: str, *, offset: int, limit: int
) -> tuple[int, Sequence[RelayAddress]]:
    """How many of the owner's addresses match ``text`` (all when it is empty), and one
    page of them, newest first."""
    where = [addresses.c.user_id == user_id]
    text = text.strip()
    if text:
        pattern = _pattern(text)
        where.append(
            func.lower(FULL_ADDRESS).like(pattern, escape="\\")
            | func.lower(addresses.c.description).like(pattern, escape="\\")
        )
    if text:
        matching = select(func.count()).select_from(addresses).where(*where)
        count = int(await conn.scalar(matching) or 0)
    else:
        # Kept by triggers: no walk over the owner's index entries.
        count = await address_counts.total(conn, user_id)
    if offset >= count:
        return count, []
    rows = await conn.execute(
        select(*ADDRESS_COLUMNS)
        .where(*where)
        .order_by(addresses.c.id.desc())
        .offset(offset)
        .limit(limit)
    )
    return count, [record(row) for row in rows]
