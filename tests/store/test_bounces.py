"""Bounces in the store: the 24-hour window, the pause, forgiveness, and racing DSNs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from maskmail.core.dsn import WINDOW, Bounce, Kind
from maskmail.core.errors import AddressNotFound
from maskmail.store import address_bounces
from maskmail.store import bounces as store
from maskmail.store.addresses import delete_address, get_address, lift_pause, update_address
from maskmail.store.clock import now
from maskmail.store.engine import create_engine, transaction
from maskmail.store.tables import bounces
from tests.support import new_address

pytestmark = pytest.mark.anyio
DOMAIN = "relay.test"
HARD = Bounce(Kind.HARD, "5.1.1")
SOFT = Bounce(Kind.SOFT, "4.4.1")
RACERS = 12


async def test_hard_bounces_pause_at_the_threshold(conn: AsyncConnection) -> None:
    user_id, address_id = await new_address(conn)
    t = now()
    seen = [
        await address_bounces.record_bounce(conn, address_id, HARD, threshold=3, when=t + i)
        for i in range(4)
    ]
    assert [r.hard_bounces for r in seen] == [1, 2, 3, 4]
    assert [r.paused for r in seen] == [False, False, True, False]
    address = await get_address(conn, user_id, address_id)
    assert address.enabled is False
    assert address.updated_time == t + 2
    report = await store.bounce_report(conn, user_id, address_id, now=t + 4)
    assert report.paused_time == t + 2
    assert report.hard_bounces == 4
    assert [row.received_time for row in report.latest] == [t + 3, t + 2, t + 1, t]


async def test_soft_bounces_and_old_hard_ones_do_not_count(conn: AsyncConnection) -> None:
    user_id, address_id = await new_address(conn)
    t = now()
    await address_bounces.record_bounce(conn, address_id, HARD, threshold=2, when=t - WINDOW)
    for i in range(5):
        recorded = await address_bounces.record_bounce(
            conn, address_id, SOFT, threshold=2, when=t + i
        )
        assert recorded == store.Recorded(hard_bounces=0, paused=False)
    recorded = await address_bounces.record_bounce(conn, address_id, HARD, threshold=2, when=t + 9)
    assert recorded == store.Recorded(hard_bounces=1, paused=False)
    assert (await get_address(conn, user_id, address_id)).enabled is True


async def test_zero_threshold_never_pauses(conn: AsyncConnection) -> None:
    user_id, address_id = await new_address(conn)
    for _ in range(10):
        recorded = await address_bounces.record_bounce(
            conn, address_id, HARD, threshold=0, when=now()
        )
        assert not recorded.paused
    assert (await get_address(conn, user_id, address_id)).enabled is True


async def test_enabling_lifts_the_pause_and_forgives(conn: AsyncConnection) -> None:
    user_id, address_id = await new_address(conn)
    t = now()
    for i in range(2):
        await address_bounces.record_bounce(conn, address_id, HARD, threshold=2, when=t + i)
    await update_address(conn, user_id, address_id, {"description": "still paused"})
    assert (await store.bounce_report(conn, user_id, address_id, now=t)).paused_time == t + 1
    await update_address(conn, user_id, address_id, {"enabled": True})
    report = await store.bounce_report(conn, user_id, address_id, now=t + 2)
    assert (report.paused_time, report.hard_bounces) == (None, 0)
    assert [row.forgiven for row in report.latest] == [True, True]
    # One more hard bounce is one, not three: no pause again.
    recorded = await address_bounces.record_bounce(conn, address_id, HARD, threshold=2, when=t + 3)
    assert recorded == store.Recorded(hard_bounces=1, paused=False)
    assert await lift_pause(conn, address_id) is False


async def test_enabling_an_address_that_was_not_paused_forgives_nothing(
    conn: AsyncConnection,
) -> None:
    user_id, address_id = await new_address(conn)
    await address_bounces.record_bounce(conn, address_id, HARD, threshold=3, when=now())
    await update_address(conn, user_id, address_id, {"enabled": True})
    report = await store.bounce_report(conn, user_id, address_id, now=now())
    assert report.hard_bounces == 1
    assert [row.forgiven for row in report.latest] == [False]


async def test_report_is_for_the_owner_only(conn: AsyncConnection) -> None:
    _, address_id = await new_address(conn)
    stranger, _ = await new_address(conn)
    with pytest.raises(AddressNotFound):
        await store.bounce_report(conn, stranger, address_id, now=now())


async def test_listing_keeps_the_latest_fifty(conn: AsyncConnection) -> None:
    user_id, address_id = await new_address(conn)
    t = now()
    for i in range(store.LISTED + 5):
        await address_bounces.record_bounce(conn, address_id, SOFT, threshold=5, when=t + i)
    report = await store.bounce_report(conn, user_id, address_id, now=t)
    assert len(report.latest) == store.LISTED
    assert report.latest[0].received_time == t + store.LISTED + 4
    assert report.latest[-1].received_time == t + 5


async def test_bounces_go_with_their_address(conn: AsyncConnection) -> None:
    user_id, address_id = await new_address(conn)
    await address_bounces.record_bounce(conn, address_id, HARD, threshold=5, when=now())
    await delete_address(conn, user_id, address_id)
    left = await conn.scalar(
        select(func.count()).select_from(bounces).where(bounces.c.address_id == address_id)
    )
    assert left == 0
    with pytest.raises(AddressNotFound):
        await address_bounces.record_bounce(conn, address_id, HARD, threshold=5, when=now())


@pytest.fixture
async def wide_engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    """A connection for every racer, so that their transactions truly overlap."""
    engine = create_engine(database_url, pool_size=RACERS)
    yield engine
    await engine.dispose()


async def test_racing_bounces_count_exactly_and_pause_once(wide_engine: AsyncEngine) -> None:
    """Each DSN in its own transaction, all at once: every count is seen exactly once."""
    engine = wide_engine
    async with transaction(engine) as conn:
        user_id, address_id = await new_address(conn)
    racers, threshold = RACERS, RACERS // 2

    async def bounce() -> store.Recorded:
        async with transaction(engine) as conn:
            return await address_bounces.record_bounce(
                conn, address_id, HARD, threshold=threshold, when=now()
            )

    results = await asyncio.gather(*(bounce() for _ in range(racers)))
    assert sorted(r.hard_bounces for r in results) == list(range(1, racers + 1))
    [pauser] = [r for r in results if r.paused]
    assert pauser.hard_bounces == threshold
    async with transaction(engine, readonly=True) as conn:
        report = await store.bounce_report(conn, user_id, address_id, now=now())
        assert report.hard_bounces == racers
        assert report.paused_time is not None
        assert (await get_address(conn, user_id, address_id)).enabled is False
