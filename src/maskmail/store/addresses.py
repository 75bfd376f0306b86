"""Relay addresses: create under the limit, list, page, change, delete, count mail."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from sqlalchemy import Row, bindparam, delete, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import addresses as rules
from maskmail.core.errors import AddressNotFound, AddressTaken, LimitReached, UserNotFound
from maskmail.core.records import RelayAddress
from maskmail.core.verdict import Counter
from maskmail.store import bounces as bounce_store
from maskmail.store.clock import now
from maskmail.store.tables import addresses, tombstones, users

EDITABLE = frozenset({"description", "enabled", "block_spam"})
# Each draw from 36^8 collides with an existing address with negligible probability;
# this many collisions in a row means something else is wrong.
MAX_DRAWS = 20

# The columns in RelayAddress's field order, so a row converts by position (see to_record).
_columns = [addresses.c[field.name] for field in fields(RelayAddress)]
ADDRESS_COLUMNS = tuple(_columns)

# The listing statements are built once: building them per request (and computing their
# cache keys) cost more than SQLite took to run them.
_of_owner = addresses.c.user_id == bindparam("user_id")
_LIST = select(*_columns).where(_of_owner).order_by(addresses.c.id)
_PAGE = _LIST.offset(bindparam("offset")).limit(bindparam("limit"))
_COUNT = select(func.count()).select_from(addresses).where(_of_owner)
_OWNER = select(users.c.id).where(users.c.id == bindparam("user_id"))
_LOCK_OWNER = _OWNER.with_for_update()


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
    """A new random address for the user, never one handed out before.

    With a limit, the owner's row is locked first, so that concurrent creates for one
    user queue up and the limit check and the insert see the same world (SQLite's BEGIN
    IMMEDIATE already serialises writers; FOR UPDATE does it on PostgreSQL). Without a
    limit there is nothing to check, and uniqueness rests on the constraints, so creates
    for one user need not queue.
    """
    owner = _LOCK_OWNER if limit > 0 else _OWNER
    if await conn.scalar(owner, {"user_id": user_id}) is None:
        raise UserNotFound(f"no user with id {user_id}")
    if limit > 0:
        have = await conn.scalar(_COUNT, {"user_id": user_id})
        if (have or 0) >= limit:
            raise LimitReached(
                f"this account has reached its limit of {limit} addresses; "
                "delete one you no longer use to make room",
                {"limit": limit},
            )
    created = now()
    # ON CONFLICT DO NOTHING rather than a SAVEPOINT per draw: a collision is a row not
    # written, not an error to roll back, which saves two round trips per create.
    upsert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    for _ in range(MAX_DRAWS):
        local = rules.generate_local_part(length, choose)
        fresh = await conn.execute(
            upsert(tombstones)
            .values(hash=rules.tombstone(rules.full_address(local, domain)), created_time=created)
            .on_conflict_do_nothing()
        )
        if fresh.rowcount != 1:
            continue  # handed out before
        result = await conn.execute(
            upsert(addresses)
            .values(
                user_id=user_id,
                address=local,
                domain=domain,
                subdomain=None,
                enabled=True,
                block_spam=False,
                description=description,
                created_time=created,
                updated_time=None,
                num_forwarded=0,
                num_blocked=0,
                num_replied=0,
                num_spam=0,
            )
            .on_conflict_do_nothing()
            .returning(*_columns)
        )
        row = result.first()
        if row is not None:
            return to_record(row)
    raise AddressTaken("could not find a free address; try again")


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
