"""The address store: tombstones, limits, changes and counters, on both backends."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from maskmail.core import addresses as rules
from maskmail.core.errors import AddressNotFound, AddressTaken, LimitReached
from maskmail.store import accounts
from maskmail.store import addresses as store
from maskmail.store.driver import DriverPool
from maskmail.store.engine import transaction
from maskmail.store.tables import tombstones
from tests.core.test_addresses import pinned

pytestmark = pytest.mark.anyio
DOMAIN = "relay.test"


async def _user(conn: AsyncConnection, email: str = "owner@example.com") -> int:
    return await accounts.add_user(conn, email)


async def test_a_used_address_is_never_drawn_again(conn: AsyncConnection) -> None:
    user = await _user(conn)
    first = await store.create_address(conn, user, domain=DOMAIN, length=6, choose=pinned("abcdef"))
    second = await store.create_address(
        conn, user, domain=DOMAIN, length=6, choose=pinned("abcdef", "ghijkl")
    )
    assert (first.address, second.address) == ("abcdef", "ghijkl")


async def test_a_deleted_address_keeps_its_tombstone(conn: AsyncConnection) -> None:
    user = await _user(conn)
    made = await store.create_address(conn, user, domain=DOMAIN, length=6, choose=pinned("qqqqqq"))
    await store.delete_address(conn, user, made.id)
    kept = await conn.scalar(
        select(tombstones.c.hash).where(tombstones.c.hash == rules.tombstone(made.full_address))
    )
    assert kept is not None
    again = await store.create_address(
        conn, user, domain=DOMAIN, length=6, choose=pinned("qqqqqq", "vvvvvv")
    )
    assert again.address == "vvvvvv"


async def test_endless_collisions_give_up_with_address_taken(conn: AsyncConnection) -> None:
    user = await _user(conn)
    await store.create_address(conn, user, domain=DOMAIN, length=6, choose=pinned("zzzzzz"))
    with pytest.raises(AddressTaken):
        await store.create_address(conn, user, domain=DOMAIN, length=6, choose=lambda alphabet: "z")


async def test_limit_counts_live_addresses(conn: AsyncConnection) -> None:
    user = await _user(conn)
    made = [await store.create_address(conn, user, domain=DOMAIN, length=8, limit=2) for _ in "ab"]
    with pytest.raises(LimitReached):
        await store.create_address(conn, user, domain=DOMAIN, length=8, limit=2)
    await store.delete_address(conn, user, made[0].id)
    await store.create_address(conn, user, domain=DOMAIN, length=8, limit=2)


async def test_update_changes_only_given_fields(conn: AsyncConnection) -> None:
    user = await _user(conn)
    made = await store.create_address(conn, user, domain=DOMAIN, length=8)
    changed = await store.update_address(conn, user, made.id, {"block_spam": True})
    assert changed.block_spam is True
    assert (changed.enabled, changed.description) == (made.enabled, made.description)
    assert changed.updated_time is not None
    with pytest.raises(ValueError, match="not editable"):
        await store.update_address(conn, user, made.id, {"num_spam": 5})


async def test_other_owner_cannot_read_change_or_delete(conn: AsyncConnection) -> None:
    user = await _user(conn)
    other = await _user(conn, "other@example.com")
    made = await store.create_address(conn, user, domain=DOMAIN, length=8)
    with pytest.raises(AddressNotFound):
        await store.get_address(conn, other, made.id)
    with pytest.raises(AddressNotFound):
        await store.update_address(conn, other, made.id, {"enabled": False})
    with pytest.raises(AddressNotFound):
        await store.delete_address(conn, other, made.id)
    assert await store.get_address(conn, user, made.id) == made


async def test_concurrent_counter_increments_are_not_lost(engine: AsyncEngine) -> None:
    async with transaction(engine) as conn:
        user = await accounts.add_user(conn, f"count-{id(engine)}@example.com")
        made = await store.create_address(conn, user, domain=DOMAIN, length=8)

    pool = DriverPool(engine)

    async def bump() -> None:
        # What the mail plane runs for each message (mail/counting.py).
        async with pool() as driver:
            await store.count_mail(driver, made.id, ["num_forwarded"])

    await asyncio.gather(*(bump() for _ in range(40)))
    async with transaction(engine, readonly=True) as conn:
        assert (await store.get_address(conn, user, made.id)).num_forwarded == 40
