"""A disabled user, in each statement that reads it: the key check, the session check,
sign-in, the mail plane's look-ups; the admin page's columns; a user's own address limit;
the audit log."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import keys
from maskmail.core.errors import LimitReached, UserNotFound
from maskmail.core.first_mail import OwnerLimits
from maskmail.store import accounts, audit_log, first_mail, mailflow, sessions, user_overview
from maskmail.store import addresses as store
from maskmail.store.accounts import UserLimits
from maskmail.store.driver import driver_of, run_on
from maskmail.store.reverse_aliases import found_or_made
from tests.core.test_addresses import pinned

pytestmark = pytest.mark.anyio
DOMAIN = "relay.test"


async def _user(conn: AsyncConnection, email: str) -> tuple[int, str]:
    user_id = await accounts.add_user(conn, email)
    key = await accounts.create_key(conn, user_id)
    return user_id, keys.hash_key(key)


async def test_a_disabled_users_keys_are_not_live(conn: AsyncConnection) -> None:
    user_id, key_hash = await _user(conn, "kim@example.com")
    other_id, other_hash = await _user(conn, "lee@example.com")
    driver = await driver_of(conn)
    assert await accounts.owner_for_key(conn, key_hash) is not None
    await accounts.set_disabled(conn, user_id, True)
    assert await accounts.owner_for_key(conn, key_hash) is None
    assert await accounts.owner_for_key(driver, key_hash) is None
    made = await store.create_for_key(driver, key_hash, domain=DOMAIN, length=8)
    assert made is None
    found = await accounts.owner_for_key(conn, other_hash)
    assert found is not None and found.user_id == other_id
    await accounts.set_disabled(conn, user_id, False)
    assert await accounts.owner_for_key(conn, key_hash) is not None


async def test_a_disabled_user_has_no_session_and_cannot_sign_in(conn: AsyncConnection) -> None:
    user_id, _ = await _user(conn, "max@example.com")
    await sessions.start_session(conn, user_id, "a" * 64, lifetime=600)
    assert (await user_overview.one(conn, user_id)).last_sign_in_time is not None
    assert await sessions.session_user(conn, "a" * 64) == (user_id, "max@example.com", False)
    await accounts.set_disabled(conn, user_id, True)
    assert await sessions.session_user(conn, "a" * 64) is None
    assert await sessions.account_for_email(conn, "MAX@example.com") is None
    await sessions.end_all(conn, user_id)
    await accounts.set_disabled(conn, user_id, False)
    assert await sessions.session_user(conn, "a" * 64) is None
    assert await sessions.account_for_email(conn, "max@example.com") is not None


async def test_the_mail_plane_sees_a_disabled_users_addresses_as_disabled(
    conn: AsyncConnection,
) -> None:
    user_id, _ = await _user(conn, "ned@example.com")
    made = await store.create_address(
        conn, user_id, domain=DOMAIN, length=6, choose=pinned("nedned")
    )
    driver = await driver_of(conn)
    made_alias = await found_or_made(driver, made.id, "shop@example.net", domain=DOMAIN)
    local, _, alias_domain = made_alias.full_address.partition("@")
    limits = OwnerLimits(per_hour=10, kept=10)

    async def enabled() -> tuple[bool, bool, bool]:
        found = await run_on(driver, mailflow.find_recipient("nedned", DOMAIN))
        route = await mailflow.find_reply_route(driver, local, alias_domain)
        checked = await run_on(
            driver, mailflow.recheck(driver.dialect, made.id, None, domain=DOMAIN)
        )
        assert found is not None and route is not None and checked.address is not None
        return found.address.enabled, route.address.enabled, checked.address.enabled

    assert await enabled() == (True, True, True)
    await accounts.set_disabled(conn, user_id, True)
    assert await enabled() == (False, False, False)
    assert await first_mail.facts(driver, user_id, "new@x.relay.test", limits, 0) is None
    await accounts.set_disabled(conn, user_id, False)
    assert await enabled() == (True, True, True)


async def test_a_users_own_address_limit_holds_in_place_of_the_setting(
    conn: AsyncConnection,
) -> None:
    user_id, key_hash = await _user(conn, "ola@example.com")
    await accounts.set_limits(conn, user_id, UserLimits(addresses=1))
    driver = await driver_of(conn)
    assert await store.create_for_key(driver, key_hash, domain=DOMAIN, length=8) is not None
    with pytest.raises(LimitReached):
        await store.create_for_key(driver, key_hash, domain=DOMAIN, length=8)
    with pytest.raises(LimitReached):
        await store.create_address(conn, user_id, domain=DOMAIN, length=8, limit=100)
    # 0 of their own: no limit, whatever the setting.
    await accounts.set_limits(conn, user_id, UserLimits(addresses=0))
    for _ in range(2):
        await store.create_address(conn, user_id, domain=DOMAIN, length=8, limit=1)
    assert (await user_overview.one(conn, user_id)).addresses == 3
    assert await accounts.limits_of(conn, user_id) == UserLimits(addresses=0)


async def test_the_overview_counts_each_users_things(conn: AsyncConnection) -> None:
    user_id, _ = await _user(conn, "pam@example.com")
    await store.create_address(conn, user_id, domain=DOMAIN, length=8)
    await accounts.set_admin(conn, user_id, True)
    row = await user_overview.one(conn, user_id)
    assert (row.addresses, row.mailboxes, row.domains, row.is_admin, row.disabled) == (
        1,
        1,
        0,
        True,
        False,
    )
    assert row.last_sign_in_time is None and row.limits == UserLimits()
    assert await accounts.is_admin(conn, user_id)
    await accounts.set_disabled(conn, user_id, True)
    assert not await accounts.is_admin(conn, user_id)
    listed = await user_overview.page(conn, offset=0, limit=1000)
    assert [r.id for r in listed] == sorted(r.id for r in listed) and row.id in {
        r.id for r in listed
    }
    with pytest.raises(UserNotFound):
        await user_overview.one(conn, 10**12)
    with pytest.raises(UserNotFound):
        await accounts.set_disabled(conn, 10**12, True)


async def test_the_audit_log_cuts_long_values_and_reads_newest_first(
    conn: AsyncConnection,
) -> None:
    before = await audit_log.count(conn)
    first = await audit_log.write(
        conn, actor_id=None, actor="op", action="x" * 40, target_id=None, target="t"
    )
    second = await audit_log.write(
        conn,
        actor_id=1,
        actor="a" * 400,
        action="limits",
        target_id=2,
        target="u@example.com",
        detail="d" * 300,
        client="c" * 100,
    )
    assert await audit_log.count(conn) == before + 2
    newest = await audit_log.newest(conn, offset=0, limit=2)
    assert [e.id for e in newest] == [second, first]
    assert (len(newest[0].actor), len(newest[0].detail), len(newest[0].client)) == (320, 200, 64)
    assert newest[1].action == "x" * 32 and newest[1].actor_id is None
    assert [e.id for e in await audit_log.newest(conn, offset=1, limit=1)] == [first]
