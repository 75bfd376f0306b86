"""Password reset links in the database: kept hashed, live for their lifetime on the
server's clock, used once, at most a few at a time; and the devices users sign in from."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store import accounts, clock, devices, password_resets

pytestmark = pytest.mark.anyio


async def test_a_link_lives_until_used_or_expired(
    conn: AsyncConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = await accounts.add_user(conn, "reset@example.com")
    assert await password_resets.add(conn, user, "a" * 64, lifetime=3600, most=3)
    assert await password_resets.add(conn, user, "b" * 64, lifetime=3600, most=3)
    assert await password_resets.user_of(conn, "a" * 64) == user
    assert await password_resets.user_of(conn, "c" * 64) is None
    # Using one burns it and every other link of the user.
    assert await password_resets.use(conn, "a" * 64) == user
    assert await password_resets.use(conn, "a" * 64) is None
    assert await password_resets.user_of(conn, "b" * 64) is None
    # An hour later, on the server's clock, a link is dead.
    assert await password_resets.add(conn, user, "d" * 64, lifetime=3600, most=3)
    started = clock.now()
    monkeypatch.setattr(password_resets, "now", lambda: started + 3600)
    assert await password_resets.user_of(conn, "d" * 64) is None
    assert await password_resets.use(conn, "d" * 64) is None


@pytest.mark.slow
async def test_an_account_has_few_live_links(
    conn: AsyncConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = await accounts.add_user(conn, "many@example.com")
    for n in range(3):
        assert await password_resets.add(conn, user, f"{n}" * 64, lifetime=3600, most=3)
    assert not await password_resets.add(conn, user, "9" * 64, lifetime=3600, most=3)
    assert await password_resets.user_of(conn, "9" * 64) is None
    # Expired links make room again.
    started = clock.now()
    monkeypatch.setattr(password_resets, "now", lambda: started + 3601)
    assert await password_resets.add(conn, user, "9" * 64, lifetime=3600, most=3)


async def test_the_account_asked_for_by_email_in_any_case(conn: AsyncConnection) -> None:
    user = await accounts.add_user(conn, "Case@Example.com")
    assert await password_resets.user_for_reset(conn, "case@EXAMPLE.com") == user
    assert await password_resets.user_for_reset(conn, "nobody@example.com") is None


async def test_deleting_the_user_deletes_their_links_and_devices(conn: AsyncConnection) -> None:
    user = await accounts.add_user(conn, "gone@example.com")
    await password_resets.add(conn, user, "e" * 64, lifetime=3600, most=3)
    await devices.seen(conn, user, "f" * 64, most=5)
    assert await accounts.delete_user_rows(conn, user)
    assert await password_resets.user_of(conn, "e" * 64) is None
    other = await accounts.add_user(conn, "other@example.com")
    assert await devices.seen(conn, other, "f" * 64, most=5) == "first"


async def test_devices_first_known_new_and_the_cap(
    conn: AsyncConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks = iter(range(1_000_000, 2_000_000))
    monkeypatch.setattr(devices, "now", lambda: next(ticks))  # a second between sign-ins
    user = await accounts.add_user(conn, "devices@example.com")
    assert await devices.seen(conn, user, "1" * 64, most=2) == "first"
    assert await devices.seen(conn, user, "1" * 64, most=2) == "known"
    assert await devices.seen(conn, user, "2" * 64, most=2) == "new"
    # A third device makes the user forget the one seen longest ago.
    assert await devices.seen(conn, user, "3" * 64, most=2) == "new"
    assert await devices.seen(conn, user, "2" * 64, most=2) == "known"
    assert await devices.seen(conn, user, "3" * 64, most=2) == "known"
    assert await devices.seen(conn, user, "1" * 64, most=2) == "new"
    # Another user's device is not this user's.
    other = await accounts.add_user(conn, "devices2@example.com")
    assert await devices.seen(conn, other, "3" * 64, most=2) == "first"
