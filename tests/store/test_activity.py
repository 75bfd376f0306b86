"""Daily counts move with the counters, in the mail plane's one counting function
(addresses.count_mail)."""

from __future__ import annotations

import secrets

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.store import accounts, activity
from maskmail.store.addresses import (
    count_mail,
    counted,
    create_address,
    delete_address,
    get_address,
)
from maskmail.store.clock import today
from maskmail.store.driver import ONE_WRITE, DriverPool, run_on
from maskmail.store.engine import transaction

pytestmark = pytest.mark.anyio


async def _address(engine: AsyncEngine) -> tuple[int, int]:
    async with transaction(engine) as conn:
        user_id = await accounts.add_user(conn, f"a{secrets.token_hex(4)}@example.com")
        made = await create_address(conn, user_id, domain="relay.test", length=8)
    return user_id, made.id


async def test_counting_adds_to_today_and_to_the_address(engine: AsyncEngine) -> None:
    user_id, address_id = await _address(engine)
    _, other_id = await _address(engine)
    async with DriverPool(engine)() as driver:
        await count_mail(driver, address_id, ["num_forwarded", "num_spam"])
        await count_mail(driver, address_id, ["num_forwarded"])
        await count_mail(driver, address_id, ["num_replied"])
        await count_mail(driver, other_id, ["num_blocked"])
    async with transaction(engine, readonly=True) as conn:
        record = await get_address(conn, user_id, address_id)
        days = await activity.last_days(conn, user_id)
        one = await activity.last_days(conn, user_id, address_id=address_id, days=7)
        none = await activity.last_days(conn, user_id, address_id=other_id)
    assert (record.num_forwarded, record.num_spam, record.num_replied) == (2, 1, 1)
    assert len(days) == 30 and days[-1].day == today() and len(one) == 7
    assert days[-1] == activity.Day(today(), forwarded=2, blocked=0, spam=1, replied=1)
    assert one[-1] == days[-1] and all(d.forwarded == 0 for d in days[:-1])
    # Another owner's address counts nothing for this one.
    assert all(d == activity.Day(d.day) for d in none)


async def test_a_count_goes_to_the_day_given_or_to_the_address_alone(
    engine: AsyncEngine,
) -> None:
    """A late count (mail/pending_counts.py) names the day its message was handled on,
    or none when the daily counts forgot that day already."""
    user_id, address_id = await _address(engine)
    pool = DriverPool(engine)
    for day in (today() - 3, None, today() - 3):
        await pool.run(counted(pool.dialect, address_id, ["num_forwarded"], day), ONE_WRITE)
    async with transaction(engine, readonly=True) as conn:
        record = await get_address(conn, user_id, address_id)
        days = await activity.last_days(conn, user_id, days=7)
    assert record.num_forwarded == 3
    assert [(d.day, d.forwarded) for d in days if d.forwarded] == [(today() - 3, 2)]


async def test_a_deleted_address_counts_nothing(engine: AsyncEngine) -> None:
    user_id, address_id = await _address(engine)
    async with transaction(engine) as conn:
        await delete_address(conn, user_id, address_id)
    async with DriverPool(engine)() as driver:
        await count_mail(driver, address_id, ["num_forwarded"])
    async with transaction(engine, readonly=True) as conn:
        assert (await activity.last_days(conn, user_id))[-1].forwarded == 0


async def test_forgetting_deletes_the_days_before_the_last_kept_ones(engine: AsyncEngine) -> None:
    user_id, address_id = await _address(engine)
    _, other_id = await _address(engine)
    now = today()
    days = (now, now - 89, now - 90, now - 400)
    async with transaction(engine) as conn:
        for ident in (address_id, other_id):
            for day in days:
                await conn.execute(
                    text(
                        "INSERT INTO daily_activity (address_id, day, num_forwarded) "
                        "VALUES (:a, :d, 1)"
                    ),
                    {"a": ident, "d": day},
                )
    async with DriverPool(engine)() as driver:
        await run_on(driver, activity.forget_old(90))
    async with transaction(engine, readonly=True) as conn:
        kept = await conn.execute(
            text(
                "SELECT address_id, day FROM daily_activity "
                "WHERE address_id IN (:a, :b) ORDER BY address_id, day"
            ),
            {"a": address_id, "b": other_id},
        )
        assert [tuple(row) for row in kept] == [
            (address_id, now - 89),
            (address_id, now),
            (other_id, now - 89),
            (other_id, now),
        ]
        record = await get_address(conn, user_id, address_id)
    assert record.num_forwarded == 0  # the address's own counters are not touched
