"""Two-factor sign-in: TOTP enrolment and codes, recovery codes, the sign-in's second step
and turning it off. Security keys are services/two_factor_keys.py.

A TOTP code is taken for the current 30-second step and the one either side (a phone's
clock drifts, and a code typed at the end of its step arrives in the next); a code is
taken once: the last accepted step is stored, and a code of that step or an earlier one
is refused, so a code seen over a shoulder cannot be used again.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from enum import StrEnum

import pyotp
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store import two_factor as store
from maskmail.store.two_factor import SecurityKey

STEP = 30
# Steps either side of the current one whose code is accepted.
DRIFT = 1
RECOVERY_CODES = 10
# Seconds a sign-in waits for its second step, and wrong second steps it may take.
PENDING_LIFETIME = 300
MAX_FAILURES = 5
SIGN_IN = "sign-in"
_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i: read from paper


def now() -> float:
    """The clock TOTP codes are checked against (tests hold it still)."""
    return time.time()


@dataclass(frozen=True, slots=True)
class Status:
    totp: bool
    keys: list[SecurityKey]
    recovery_left: int

    @property
    def on(self) -> bool:
        return self.totp or bool(self.keys)


@dataclass(frozen=True, slots=True)
class Enrolment:
    secret: str
    uri: str


async def status(conn: AsyncConnection, user_id: int) -> Status:
    found = await store.totp(conn, user_id)
    return Status(
        totp=found is not None and found.enabled_time is not None,
        keys=await store.keys(conn, user_id),
        recovery_left=await store.recovery_codes_left(conn, user_id),
    )


def normal_code(code: str) -> str:
    """A code as typed, without the spaces and dashes people add, in lower case."""
    return "".join(c for c in code.lower() if c not in " -\t")[:64]


def matching_step(secret: str, code: str, moment: float) -> int | None:
    """The time step (current or ±DRIFT) whose code ``code`` is, or None."""
    code = normal_code(code)
    if len(code) != 6 or not code.isdigit():
        return None
    totp = pyotp.TOTP(secret, interval=STEP)
    current = int(moment) // STEP
    for step in range(current - DRIFT, current + DRIFT + 1):
        if hmac.compare_digest(totp.at(step * STEP), code):
            return step
    return None


async def start_totp(
    conn: AsyncConnection, user_id: int, email: str, issuer: str
) -> Enrolment | None:
    """A new secret waiting for its first code; None when an app is in force already."""
    secret = pyotp.random_base32()
    if not await store.set_pending_totp(conn, user_id, secret):
        return None
    uri = pyotp.TOTP(secret, interval=STEP).provisioning_uri(name=email, issuer_name=issuer)
    return Enrolment(secret, uri)


async def waiting_totp(
    conn: AsyncConnection, user_id: int, email: str, issuer: str
) -> Enrolment | None:
    """The secret waiting for its first code, to show again after a wrong one."""
    found = await store.totp(conn, user_id)
    if found is None or found.enabled_time is not None:
        return None
    uri = pyotp.TOTP(found.secret, interval=STEP).provisioning_uri(name=email, issuer_name=issuer)
    return Enrolment(found.secret, uri)


async def confirm_totp(
    conn: AsyncConnection, user_id: int, code: str, moment: float
) -> list[str] | None:
    """Put the waiting secret in force if ``code`` is its code now: the new recovery codes
    (an empty list when the user has some already); None for a wrong code."""
    found = await store.totp(conn, user_id)
    if found is None or found.enabled_time is not None:
        return None
    step = matching_step(found.secret, code, moment)
    if step is None or not await store.enable_totp(conn, user_id, step):
        return None
    return await first_recovery_codes(conn, user_id)


async def first_recovery_codes(conn: AsyncConnection, user_id: int) -> list[str]:
    """New recovery codes when the user has none; else an empty list."""
    if await store.recovery_codes_left(conn, user_id):
        return []
    return await new_recovery_codes(conn, user_id)


def _recovery_code() -> str:
    # 12 characters of 31: 59 bits, read and typed as three groups of four.
    raw = "".join(secrets.choice(_ALPHABET) for _ in range(12))
    return f"{raw[:4]}-{raw[4:8]}-{raw[8:]}"


def _hash_code(user_id: int, code: str) -> str:
    return hashlib.sha256(f"recovery:{user_id}:{normal_code(code)}".encode()).hexdigest()


async def new_recovery_codes(conn: AsyncConnection, user_id: int) -> list[str]:
    """Ten new single-use codes in place of any old ones; only their hashes are kept."""
    codes = [_recovery_code() for _ in range(RECOVERY_CODES)]
    await store.replace_recovery_codes(conn, user_id, [_hash_code(user_id, c) for c in codes])
    return codes


async def check_code(conn: AsyncConnection, user_id: int, code: str, moment: float) -> bool:
    """Whether ``code`` is a TOTP code not used before or an unspent recovery code; either
    is spent by this check."""
    found = await store.totp(conn, user_id)
    if found is not None and found.enabled_time is not None:
        step = matching_step(found.secret, code, moment)
        if step is not None:
            return await store.take_step(conn, user_id, step)
    normal = normal_code(code)
    if len(normal) != 12:
        return False
    return await store.use_recovery_code(conn, user_id, _hash_code(user_id, normal))


async def turn_off(conn: AsyncConnection, user_id: int, code: str, moment: float) -> bool:
    """Remove every second factor, if ``code`` passes (the door checked the password)."""
    if not await check_code(conn, user_id, code, moment):
        return False
    await store.remove_all(conn, user_id)
    return True


async def confirm_owner(conn: AsyncConnection, user_id: int, code: str, moment: float) -> bool:
    """For a change that needs the owner's second factor as well as the password (deleting
    the account): True when two-factor is off, or ``code`` passes (and is spent)."""
    if not await store.is_on(conn, user_id):
        return True
    return await check_code(conn, user_id, code, moment)


# The sign-in's second step


class Step(StrEnum):
    """What one try at the second step came to."""

    SIGNED_IN = "signed in"
    WRONG = "wrong"
    # Too many wrong tries, expired, or finished already: sign in with the password again.
    ENDED = "ended"


async def begin_sign_in(conn: AsyncConnection, user_id: int, token_hash: str) -> bool:
    """After the right password: True when a second step is needed (its state is kept
    under ``token_hash``), False when the user has no second factor."""
    if not await store.is_on(conn, user_id):
        return False
    # A security key's first challenge, made here since the page that shows it is a GET.
    challenge = secrets.token_urlsafe(32)
    await store.start_pending(
        conn, token_hash, user_id, SIGN_IN, lifetime=PENDING_LIFETIME, challenge=challenge
    )
    return True


async def waiting_user(conn: AsyncConnection, token_hash: str) -> int | None:
    """The user whose sign-in waits under ``token_hash``, or None."""
    found = await store.pending(conn, token_hash, SIGN_IN)
    return None if found is None else found.user_id


async def second_step(
    conn: AsyncConnection, token_hash: str, code: str, moment: float
) -> tuple[Step, int | None]:
    """Try ``code`` on the waiting sign-in: its outcome and the user."""
    found = await store.pending(conn, token_hash, SIGN_IN)
    if found is None:
        return Step.ENDED, None
    return await settle(
        conn, token_hash, found.user_id, await check_code(conn, found.user_id, code, moment)
    )


async def settle(
    conn: AsyncConnection, token_hash: str, user_id: int, passed: bool
) -> tuple[Step, int | None]:
    """End the waiting sign-in once it passed (one caller wins), or count a failure."""
    if passed:
        won = await store.finish_pending(conn, token_hash, SIGN_IN)
        return (Step.SIGNED_IN, user_id) if won else (Step.ENDED, None)
    alive = await store.count_failure(conn, token_hash, MAX_FAILURES)
    return (Step.WRONG if alive else Step.ENDED), user_id
