"""Tombstones: the hash of every address and subdomain name ever handed out, written when
it is handed out and never deleted, so that no name is handed out twice. The one
exception is an address made on first mail whose message was then not accepted: it was
never handed out (``store.first_mail.unmake``)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store.clock import now
from maskmail.store.driver import Driver, as_driver
from maskmail.store.statements import Statement
from maskmail.store.tables import tombstones

# ON CONFLICT DO NOTHING: a name handed out before is a row not written, not an error to
# roll back; concurrent writers of one name meet at the key, and only one gets the row.
_RESERVE = Statement.portable(
    "INSERT INTO tombstones (hash, created_time) VALUES (?, ?) ON CONFLICT DO NOTHING RETURNING 1"
)
# The same write under a condition, for a statement that writes the tombstone with the
# address it stands for (``addresses.create_for_key``): the hash and the time are its
# arguments, the condition and the ON CONFLICT clause follow.
RESERVE_IF = "INSERT INTO tombstones (hash, created_time) SELECT ?, ? WHERE"


async def reserve(conn: AsyncConnection | Driver, tombstone: str, created: int) -> bool:
    """Write the tombstone; False when it exists, that is, the name was handed out before."""
    driver = await as_driver(conn)
    return bool(await driver.rows(_RESERVE, tombstone, created))


_FORGET = Statement.portable("DELETE FROM tombstones WHERE hash = ?")


async def forget(driver: Driver, tombstone: str) -> None:
    """Delete a tombstone written in error: only ``store.first_mail.unmake`` does."""
    await driver.rows(_FORGET, tombstone)


async def keep(conn: AsyncConnection, hashes: Iterable[str]) -> None:
    """Write each of these tombstones that is not written yet."""
    wanted = set(hashes)
    if not wanted:
        return
    kept = set(
        (await conn.execute(select(tombstones.c.hash).where(tombstones.c.hash.in_(wanted))))
        .scalars()
        .all()
    )
    created = now()
    missing = [{"hash": h, "created_time": created} for h in sorted(wanted - kept)]
    if missing:
        await conn.execute(insert(tombstones), missing)
