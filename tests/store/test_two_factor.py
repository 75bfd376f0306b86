"""Two-factor rows on both backends: each "use once" passes once, states expire, and
turning two-factor off leaves nothing."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store import accounts
from maskmail.store import two_factor as store
from maskmail.store.tables import recovery_codes, security_keys, totp_secrets, two_factor_pending

pytestmark = pytest.mark.anyio


async def _rows(conn: AsyncConnection, user_id: int) -> int:
    total = 0
    for table in (totp_secrets, recovery_codes, security_keys, two_factor_pending):
        total += int(
            await conn.scalar(
                select(func.count()).select_from(table).where(table.c.user_id == user_id)
            )
            or 0
        )
    return total


async def test_a_totp_secret_waits_then_takes_each_step_once(conn: AsyncConnection) -> None:
    user_id = await accounts.add_user(conn, "tia@example.com")
    assert await store.set_pending_totp(conn, user_id, "A" * 32)
    # A new enrolment replaces the waiting secret.
    assert await store.set_pending_totp(conn, user_id, "B" * 32)
    assert not await store.is_on(conn, user_id)
    assert not await store.take_step(conn, user_id, 100)  # not in force yet
    assert await store.enable_totp(conn, user_id, 100)
    assert not await store.enable_totp(conn, user_id, 101)
    found = await store.totp(conn, user_id)
    assert found is not None and found.secret == "B" * 32 and found.enabled_time
    assert await store.is_on(conn, user_id)
    # The step of enrolment, and any earlier one, is spent; a later one passes once.
    assert not await store.take_step(conn, user_id, 100)
    assert not await store.take_step(conn, user_id, 99)
    assert await store.take_step(conn, user_id, 101)
    assert not await store.take_step(conn, user_id, 101)
    # In force, it is not replaced by a new enrolment.
    assert not await store.set_pending_totp(conn, user_id, "C" * 32)
    found = await store.totp(conn, user_id)
    assert found is not None and found.secret == "B" * 32


async def test_recovery_codes_are_spent_once(conn: AsyncConnection) -> None:
    user_id = await accounts.add_user(conn, "ulf@example.com")
    other = await accounts.add_user(conn, "val@example.com")
    await store.replace_recovery_codes(conn, user_id, ["a" * 64, "b" * 64])
    await store.replace_recovery_codes(conn, other, ["a" * 64])
    assert await store.recovery_codes_left(conn, user_id) == 2
    assert await store.use_recovery_code(conn, user_id, "a" * 64)
    assert not await store.use_recovery_code(conn, user_id, "a" * 64)
    assert not await store.use_recovery_code(conn, user_id, "c" * 64)
    assert await store.recovery_codes_left(conn, user_id) == 1
    assert await store.recovery_codes_left(conn, other) == 1
    await store.replace_recovery_codes(conn, user_id, ["d" * 64])
    assert not await store.use_recovery_code(conn, user_id, "b" * 64)
    assert await store.use_recovery_code(conn, user_id, "d" * 64)


async def test_keys_are_the_owners_and_unique(conn: AsyncConnection) -> None:
    user_id = await accounts.add_user(conn, "wes@example.com")
    other = await accounts.add_user(conn, "xia@example.com")
    key_id = await store.add_key(
        conn, user_id, credential_id="cred-1", public_key="pk", sign_count=0, name="Blue"
    )
    assert key_id is not None
    # One credential, one account.
    again = await store.add_key(
        conn, other, credential_id="cred-1", public_key="pk", sign_count=0, name="Blue"
    )
    assert again is None
    assert await store.is_on(conn, user_id) and not await store.is_on(conn, other)
    assert await store.key_by_credential(conn, other, "cred-1") is None
    await store.mark_key_used(conn, key_id, 7)
    found = await store.key_by_credential(conn, user_id, "cred-1")
    assert found is not None and found.sign_count == 7 and found.last_used_time
    assert [k.name for k in await store.keys(conn, user_id)] == ["Blue"]
    assert not await store.remove_key(conn, other, key_id)
    assert await store.remove_key(conn, user_id, key_id)
    assert await store.count_keys(conn, user_id) == 0


async def test_a_waiting_state_ends_once_and_after_its_failures(conn: AsyncConnection) -> None:
    user_id = await accounts.add_user(conn, "yan@example.com")
    await store.start_pending(conn, "p" * 64, user_id, "sign-in", lifetime=300, challenge="c1")
    assert await store.pending(conn, "p" * 64, "register") is None  # another kind
    found = await store.pending(conn, "p" * 64, "sign-in")
    assert found is not None and found.user_id == user_id and found.challenge == "c1"
    await store.set_challenge(conn, "p" * 64, "c2")
    assert await store.count_failure(conn, "p" * 64, limit=2)
    assert not await store.count_failure(conn, "p" * 64, limit=2)
    assert await store.pending(conn, "p" * 64, "sign-in") is None
    # A new sign-in of the same user replaces the waiting one; one ends once.
    await store.start_pending(conn, "q" * 64, user_id, "sign-in", lifetime=300)
    await store.start_pending(conn, "r" * 64, user_id, "sign-in", lifetime=300)
    assert await store.pending(conn, "q" * 64, "sign-in") is None
    assert await store.finish_pending(conn, "r" * 64, "sign-in")
    assert not await store.finish_pending(conn, "r" * 64, "sign-in")
    # An expired one is not found, and cannot be finished.
    await store.start_pending(conn, "s" * 64, user_id, "sign-in", lifetime=-1)
    assert await store.pending(conn, "s" * 64, "sign-in") is None
    assert not await store.finish_pending(conn, "s" * 64, "sign-in")


async def test_turning_off_removes_every_row(conn: AsyncConnection) -> None:
    user_id = await accounts.add_user(conn, "zed@example.com")
    await store.set_pending_totp(conn, user_id, "A" * 32)
    await store.enable_totp(conn, user_id, 1)
    await store.replace_recovery_codes(conn, user_id, ["a" * 64])
    await store.add_key(conn, user_id, credential_id="z", public_key="pk", sign_count=0, name="K")
    await store.start_pending(conn, "t" * 64, user_id, "register", lifetime=300)
    assert await _rows(conn, user_id) == 4
    await store.remove_all(conn, user_id)
    assert await _rows(conn, user_id) == 0
    assert not await store.is_on(conn, user_id)
