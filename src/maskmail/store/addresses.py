"""Relay addresses: create under the limit, list, page, change, delete, count mail."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from sqlalchemy import Row, bindparam, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import addresses as rules
from maskmail.core.errors import AddressNotFound
from maskmail.core.records import RelayAddress
from maskmail.core.verdict import Counter
from maskmail.store import bounces as bounce_store
from maskmail.store import raw, wire
from maskmail.store.clock import now
from maskmail.store.tables import addresses

EDITABLE = frozenset({"description", "enabled", "block_spam"})
# The columns in RelayAddress's field order, so a row converts by position (see to_record).
_columns = [addresses.c[field.name] for field in fields(RelayAddress)]
ADDRESS_COLUMNS = tuple(_columns)

# The listing statements are built once: building them per request (and computing their
# cache keys) cost more than SQLite took to run them.
_of_owner = addresses.c.user_id == bindparam("user_id")
_LIST = select(*_columns).where(_of_owner).order_by(addresses.c.id)
_PAGE = _LIST.offset(bindparam("offset")).limit(bindparam("limit"))
_COUNT = select(func.count()).select_from(addresses).where(_of_owner)


def to_record(row: Row[Any] | Sequence[Any]) -> RelayAddress:
    # By position: reading fourteen attributes by name per row was half the time of
    # listing 1,000 addresses (docs/benchmarks.md). Boolean columns already arrive as bool.
    return RelayAddress(*row)


async def create_address(
    conn: AsyncConnection,
    user_id: int,
    *,
    domain: str,
    length: int,
    limit: int = 0,
    description: str = "",
    choose: rules.Chooser = secrets.choice,
) -> RelayAddress:
    """``wire.create`` inside the caller's transaction: one way to create, for every door."""
    return await wire.create(
        await raw.of_connection(conn),
        user_id,
        domain=domain,
        length=length,
        limit=limit,
        description=description,
        choose=choose,
    )


def _owned(user_id: int, address_id: int) -> Any:
    return (addresses.c.id == address_id) & (addresses.c.user_id == user_id)


async def list_addresses(conn: AsyncConnection, user_id: int) -> list[RelayAddress]:
    """All of the owner's addresses, oldest first."""
    result = await conn.execute(_LIST, {"user_id": user_id})
    return [to_record(row) for row in result.all()]


async def page_addresses(
    conn: AsyncConnection, user_id: int, *, offset: int, limit: int
) -> tuple[int, Sequence[RelayAddress]]:
    """The owner's total and one page of addresses: two queries, whatever the page size."""
    count = int(await conn.scalar(_COUNT, {"user_id": user_id}) or 0)
    if offset >= count:
        return count, []
    result = await conn.execute(_PAGE, {"user_id": user_id, "offset": offset, "limit": limit})
    return count, [to_record(row) for row in result.all()]


async def get_address(conn: AsyncConnection, user_id: int, address_id: int) -> RelayAddress:
    row = (await conn.execute(select(*_columns).where(_owned(user_id, address_id)))).first()
    if row is None:
        raise AddressNotFound("no such address")
    return to_record(row)


async def update_address(
    conn: AsyncConnection, user_id: int, address_id: int, changes: Mapping[str, object]
) -> RelayAddress:
    """Change only the given editable fields; any change stamps ``updated_time``.
    Enabling an address that hard bounces paused lifts the pause."""
    unknown = set(changes) - EDITABLE
    if unknown:
        raise ValueError(f"not editable: {sorted(unknown)}")
    if not changes:
        return await get_address(conn, user_id, address_id)
    result = await conn.execute(
        update(addresses)
        .where(_owned(user_id, address_id))
        .values(**changes, updated_time=now())
        .returning(*_columns)
    )
    row = result.first()
    if row is None:
        raise AddressNotFound("no such address")
    if changes.get("enabled") is True:
        # The owner switched it back on: a bounce pause ends with that.
        await bounce_store.lift_pause(conn, address_id)
    return to_record(row)


async def delete_address(conn: AsyncConnection, user_id: int, address_id: int) -> None:
    """Delete the address; its tombstone, written at creation, stays."""
    result = await conn.execute(delete(addresses).where(_owned(user_id, address_id)))
    if result.rowcount != 1:
        raise AddressNotFound("no such address")


async def find_address(conn: AsyncConnection, local: str, domain: str) -> RelayAddress | None:
    """The live address ``local@domain``, for the mail plane."""
    row = (
        await conn.execute(
            select(*_columns).where(
                addresses.c.address == local.lower(), addresses.c.domain == domain.lower()
            )
        )
    ).first()
    return None if row is None else to_record(row)


async def count_mail(conn: AsyncConnection, address_id: int, counter: Counter) -> None:
    """Add one to a counter in a single atomic statement: never read-modify-write."""
    column = addresses.c[counter]
    await conn.execute(
        update(addresses).where(addresses.c.id == address_id).values({column: column + 1})
    )
