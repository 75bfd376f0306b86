"""Addresses made on first mail in the store (issue 21 item 2): the owner's rate and cap
hold for makers racing on separate pools (as separate mail-plane processes would), and
an address unmade leaves nothing behind, unless its owner deleted it first."""

from __future__ import annotations

import asyncio
import secrets

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.core.errors import AddressTaken, CatchAllPaused
from maskmail.core.first_mail import OwnerLimits, OwnerMade
from maskmail.core.records import RelayAddress
from maskmail.store import accounts, first_mail, subdomains
from maskmail.store.addresses import Place, delete_address, list_addresses
from maskmail.store.clock import now
from maskmail.store.driver import DriverPool
from maskmail.store.engine import create_engine, transaction

pytestmark = pytest.mark.anyio
DOMAIN = "relay.test"


async def _owner(engine: AsyncEngine) -> tuple[int, str]:
    """A user with a subdomain of their own: the id and the subdomain."""
    name = f"fm-{secrets.token_hex(4)}"
    async with transaction(engine) as conn:
        user_id = await accounts.add_user(conn, f"{name}@example.com")
        await subdomains.claim(conn, user_id, name, domain=DOMAIN)
    return user_id, name


async def _make(
    pool: DriverPool, user_id: int, sub: str, local: str, limits: OwnerLimits
) -> RelayAddress:
    async with pool() as driver:
        return await first_mail.make(
            driver,
            user_id,
            domain=DOMAIN,
            local=local,
            place=Place.SUBDOMAIN,
            on=sub,
            description="first mail from a@shop.example",
            address_limit=0,
            limits=limits,
            now=now(),
        )


async def test_racing_makers_on_two_pools_stop_at_the_rate(
    database_url: str, engine: AsyncEngine
) -> None:
    user_id, sub = await _owner(engine)
    other = create_engine(database_url, pool_size=4)
    pools = [DriverPool(engine), DriverPool(other)]
    limits = OwnerLimits(per_hour=4, kept=0)

    async def attempt(i: int) -> bool:
        try:
            await _make(pools[i % 2], user_id, sub, f"r{i}", limits)
        except CatchAllPaused:
            return False
        return True

    try:
        made = await asyncio.gather(*(attempt(i) for i in range(12)))
    finally:
        await other.dispose()
    assert sum(made) == 4
    async with transaction(engine, readonly=True) as conn:
        assert len(await list_addresses(conn, user_id)) == 4
        counted = await first_mail.owner_made(conn, user_id, OwnerLimits(100, 100), now())
    assert counted == OwnerMade(last_hour=4, kept=4)


async def test_the_cap_counts_kept_addresses_and_the_window_moves(engine: AsyncEngine) -> None:
    user_id, sub = await _owner(engine)
    pool = DriverPool(engine)
    await _make(pool, user_id, sub, "old", OwnerLimits())
    async with transaction(engine) as conn:
        await conn.exec_driver_sql(
            "UPDATE first_mail_addresses SET created_time = created_time - 3600 "
            f"WHERE user_id = {user_id}"
        )
    # An hour old: out of the rate's window, still kept.
    await _make(pool, user_id, sub, "new", OwnerLimits(per_hour=1, kept=0))
    with pytest.raises(CatchAllPaused):
        await _make(pool, user_id, sub, "more", OwnerLimits(per_hour=1, kept=0))
    with pytest.raises(CatchAllPaused):
        await _make(pool, user_id, sub, "more", OwnerLimits(per_hour=0, kept=2))
    async with transaction(engine) as conn:
        old = next(a for a in await list_addresses(conn, user_id) if a.address == "old")
        await delete_address(conn, user_id, old.id)
    await _make(pool, user_id, sub, "more", OwnerLimits(per_hour=0, kept=2))


async def test_unmade_leaves_nothing_and_a_deleted_one_stays_used(engine: AsyncEngine) -> None:
    user_id, sub = await _owner(engine)
    pool = DriverPool(engine)
    made = await _make(pool, user_id, sub, "retry", OwnerLimits())
    async with pool() as driver:
        assert await first_mail.unmake(driver, made)
        found = await first_mail.facts(driver, user_id, made.full_address, OwnerLimits(), now())
    assert found is not None and not found.used_before and found.made.kept == 0
    # The retry makes it again; once its owner deleted it, unmaking does nothing and
    # the address is never made again.
    again = await _make(pool, user_id, sub, "retry", OwnerLimits())
    async with transaction(engine) as conn:
        await delete_address(conn, user_id, again.id)
    async with pool() as driver:
        assert not await first_mail.unmake(driver, again)
        found = await first_mail.facts(driver, user_id, again.full_address, OwnerLimits(), now())
    assert found is not None and found.used_before
    with pytest.raises(AddressTaken):
        await _make(pool, user_id, sub, "retry", OwnerLimits())


async def test_a_message_racing_to_a_made_address_is_not_paused(engine: AsyncEngine) -> None:
    """Two messages to one new name: the second finds it made, even with the owner now
    at the limit; it is no new address, so it is delivered, not deferred."""
    user_id, sub = await _owner(engine)
    pool = DriverPool(engine)
    limits = OwnerLimits(per_hour=1, kept=1)
    await _make(pool, user_id, sub, "twice", limits)
    with pytest.raises(AddressTaken):
        await _make(pool, user_id, sub, "twice", limits)
    with pytest.raises(CatchAllPaused):
        await _make(pool, user_id, sub, "other", limits)
