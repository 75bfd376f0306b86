"""Each user's address count, kept by the database, equals the rows whatever writes them."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import delete, func, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from maskmail.core import keys
from maskmail.store import accounts, address_counts, listing
from maskmail.store import addresses as store
from maskmail.store.driver import DriverPool, driver_of, run_on
from maskmail.store.engine import transaction
from maskmail.store.tables import addresses, users

pytestmark = pytest.mark.anyio
DOMAIN = "relay.test"


async def _kept_and_real(conn: AsyncConnection, user_id: int) -> tuple[int, int]:
    kept = await address_counts.total(conn, user_id)
    real = await conn.scalar(
        select(func.count()).select_from(addresses).where(addresses.c.user_id == user_id)
    )
    return int(kept or 0), int(real or 0)


async def test_every_door_that_adds_or_removes_addresses_is_counted(
    conn: AsyncConnection,
) -> None:
    user = await accounts.add_user(conn, "counted@example.com")
    other = await accounts.add_user(conn, "other-counted@example.com")
    key_hash = keys.hash_key(keys.generate_key())
    await accounts.add_key(conn, user, key_hash)
    assert await _kept_and_real(conn, user) == (0, 0)

    made = [await store.create_address(conn, user, domain=DOMAIN, length=8) for _ in range(3)]
    driver = await driver_of(conn)
    await store.create_address(driver, user, domain=DOMAIN, length=8)
    assert await store.create_for_key(driver, key_hash, domain=DOMAIN, length=8) is not None
    await store.create_address(conn, other, domain=DOMAIN, length=8)
    assert await _kept_and_real(conn, user) == (5, 5)

    # A bulk insert of several owners' rows in one statement.
    await conn.execute(
        insert(addresses),
        [
            {"user_id": owner, "address": f"bulk{n}", "domain": DOMAIN, "created_time": 1}
            for n, owner in enumerate([user, user, other])
        ],
    )
    assert await _kept_and_real(conn, user) == (7, 7)
    assert await _kept_and_real(conn, other) == (2, 2)

    await store.delete_address(conn, user, made[0].id)
    await conn.execute(delete(addresses).where(addresses.c.address.like("bulk%")))
    assert await _kept_and_real(conn, user) == (4, 4)
    assert await _kept_and_real(conn, other) == (1, 1)

    page = await run_on(driver, listing.page(key_hash, offset=0, limit=2))
    assert page is not None and page.count == 4


async def test_deleting_a_user_takes_their_addresses_and_leaves_others_counted(
    conn: AsyncConnection,
) -> None:
    gone = await accounts.add_user(conn, "gone@example.com")
    stays = await accounts.add_user(conn, "stays@example.com")
    for owner in (gone, gone, stays):
        await store.create_address(conn, owner, domain=DOMAIN, length=8)
    await conn.execute(delete(users).where(users.c.id == gone))
    assert await _kept_and_real(conn, gone) == (0, 0)
    assert await _kept_and_real(conn, stays) == (1, 1)


async def test_racing_creates_and_deletes_keep_the_count_exact(engine: AsyncEngine) -> None:
    async with transaction(engine) as conn:
        user = await accounts.add_user(conn, f"count-race-{id(engine)}@example.com")
        key_hash = keys.hash_key(keys.generate_key())
        await accounts.add_key(conn, user, key_hash)
        first = await store.create_address(conn, user, domain=DOMAIN, length=8)

    source = DriverPool(engine)

    async def create() -> None:
        async with source() as driver:  # as the API's POST does
            await store.create_for_key(driver, key_hash, domain=DOMAIN, length=8)

    async def remove() -> None:
        async with transaction(engine) as conn:
            await store.delete_address(conn, user, first.id)

    await asyncio.gather(*(create() for _ in range(10)), remove())
    async with transaction(engine, readonly=True) as conn:
        assert await _kept_and_real(conn, user) == (10, 10)
