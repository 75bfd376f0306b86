"""Two-factor workflows with the clock held still: the TOTP window (the current step and
one either side), replays, recovery codes, and the second step's outcomes."""

from __future__ import annotations

import pyotp
import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.services import two_factor
from maskmail.services.two_factor import STEP, Step
from maskmail.store import accounts

pytestmark = pytest.mark.anyio
# A frozen "now": the middle of a step, so that ±STEP lands in the steps either side.
NOW = 1_790_000_015.0


async def _enrolled(conn: AsyncConnection, email: str) -> tuple[int, pyotp.TOTP, list[str]]:
    user_id = await accounts.add_user(conn, email)
    enrolment = await two_factor.start_totp(conn, user_id, email, "maskmail")
    assert enrolment is not None and enrolment.secret in enrolment.uri
    app = pyotp.TOTP(enrolment.secret, interval=STEP)
    codes = await two_factor.confirm_totp(conn, user_id, app.at(NOW - 3 * STEP), NOW - 3 * STEP)
    assert codes is not None and len(codes) == 10 and len(set(codes)) == 10
    return user_id, app, codes


async def test_enrolment_needs_the_code_of_now(conn: AsyncConnection) -> None:
    user_id = await accounts.add_user(conn, "amy@example.com")
    enrolment = await two_factor.start_totp(conn, user_id, "amy@example.com", "maskmail")
    assert enrolment is not None
    app = pyotp.TOTP(enrolment.secret, interval=STEP)
    assert await two_factor.confirm_totp(conn, user_id, app.at(NOW - 5 * STEP), NOW) is None
    assert await two_factor.confirm_totp(conn, user_id, "abcdef", NOW) is None
    assert not (await two_factor.status(conn, user_id)).on
    codes = await two_factor.confirm_totp(conn, user_id, app.at(NOW), NOW)
    assert codes is not None and len(codes) == 10
    state = await two_factor.status(conn, user_id)
    assert state.on and state.totp and state.recovery_left == 10
    # In force: no second enrolment until it is turned off.
    assert await two_factor.start_totp(conn, user_id, "amy@example.com", "maskmail") is None


@pytest.mark.parametrize(
    ("offset", "taken"),
    [(-2 * STEP, False), (-STEP, True), (0, True), (STEP, True), (2 * STEP, False)],
)
async def test_the_window_is_the_step_and_one_either_side(
    conn: AsyncConnection, offset: int, taken: bool
) -> None:
    user_id, app, _ = await _enrolled(conn, f"bo{offset + 100}@example.com")
    assert await two_factor.check_code(conn, user_id, app.at(NOW + offset), NOW) is taken


async def test_a_code_is_taken_once_and_none_older_after_it(conn: AsyncConnection) -> None:
    user_id, app, _ = await _enrolled(conn, "cy@example.com")
    assert await two_factor.check_code(conn, user_id, app.at(NOW), NOW)
    # The same code again within its window: a replay.
    assert not await two_factor.check_code(conn, user_id, app.at(NOW), NOW + 10)
    # The previous step's code is still in the window, but older than the one taken.
    assert not await two_factor.check_code(conn, user_id, app.at(NOW - STEP), NOW)
    assert await two_factor.check_code(conn, user_id, app.at(NOW + STEP), NOW + STEP)


async def test_recovery_codes_work_once_in_any_spelling(conn: AsyncConnection) -> None:
    user_id, _, codes = await _enrolled(conn, "dee@example.com")
    first, second = codes[0], codes[1]
    assert await two_factor.check_code(conn, user_id, first, NOW)
    assert not await two_factor.check_code(conn, user_id, first, NOW)
    typed = second.upper().replace("-", " ")
    assert await two_factor.check_code(conn, user_id, typed, NOW)
    assert (await two_factor.status(conn, user_id)).recovery_left == 8
    fresh = await two_factor.new_recovery_codes(conn, user_id)
    assert not await two_factor.check_code(conn, user_id, codes[2], NOW)
    assert await two_factor.check_code(conn, user_id, fresh[0], NOW)


async def test_the_second_step_ends_after_its_failures(conn: AsyncConnection) -> None:
    user_id, app, _ = await _enrolled(conn, "eli@example.com")
    assert await two_factor.begin_sign_in(conn, user_id, "w" * 64)
    outcomes = [
        (await two_factor.second_step(conn, "w" * 64, "000000", NOW))[0]
        for _ in range(two_factor.MAX_FAILURES)
    ]
    assert outcomes == [Step.WRONG] * (two_factor.MAX_FAILURES - 1) + [Step.ENDED]
    # Ended: even the right code does not sign in with it.
    assert await two_factor.second_step(conn, "w" * 64, app.at(NOW), NOW) == (Step.ENDED, None)
    assert await two_factor.begin_sign_in(conn, user_id, "x" * 64)
    assert await two_factor.second_step(conn, "x" * 64, app.at(NOW), NOW) == (
        Step.SIGNED_IN,
        user_id,
    )
    # Single use: the state is gone once it signed in.
    assert await two_factor.waiting_user(conn, "x" * 64) is None


async def test_no_second_step_without_a_second_factor(conn: AsyncConnection) -> None:
    user_id = await accounts.add_user(conn, "fin@example.com")
    assert not await two_factor.begin_sign_in(conn, user_id, "y" * 64)
    assert await two_factor.waiting_user(conn, "y" * 64) is None


async def test_turning_off_needs_a_good_code(conn: AsyncConnection) -> None:
    user_id, app, _ = await _enrolled(conn, "gus@example.com")
    assert not await two_factor.turn_off(conn, user_id, "123456", NOW)
    assert (await two_factor.status(conn, user_id)).on
    assert await two_factor.turn_off(conn, user_id, app.at(NOW), NOW)
    state = await two_factor.status(conn, user_id)
    assert not state.on and state.recovery_left == 0


async def test_confirming_the_owner_needs_a_code_only_with_two_factor_on(
    conn: AsyncConnection,
) -> None:
    plain = await accounts.add_user(conn, "hal@example.com")
    assert await two_factor.confirm_owner(conn, plain, "", NOW)
    user_id, app, codes = await _enrolled(conn, "ida@example.com")
    assert not await two_factor.confirm_owner(conn, user_id, "", NOW)
    assert not await two_factor.confirm_owner(conn, user_id, "000000", NOW)
    assert await two_factor.confirm_owner(conn, user_id, app.at(NOW), NOW)
    assert await two_factor.confirm_owner(conn, user_id, codes[0], NOW)
    assert not await two_factor.confirm_owner(conn, user_id, codes[0], NOW)
