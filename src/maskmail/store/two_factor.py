"""Two-factor sign-in's rows: TOTP secrets, recovery codes, security keys, and the
short-lived states of a sign-in's second step or a key's registration.

Every "use once" here is one conditional statement whose row count says whether this
caller won, so two requests racing with the same code or token cannot both pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store.clock import now
from maskmail.store.tables import (
    recovery_codes,
    security_keys,
    totp_secrets,
    two_factor_pending,
)


@dataclass(frozen=True, slots=True)
class Totp:
    secret: str
    enabled_time: int | None


@dataclass(frozen=True, slots=True)
class SecurityKey:
    id: int
    credential_id: str
    public_key: str
    sign_count: int
    name: str
    created_time: int
    last_used_time: int | None


@dataclass(frozen=True, slots=True)
class Pending:
    user_id: int
    challenge: str | None
    failures: int


# TOTP


async def totp(conn: AsyncConnection, user_id: int) -> Totp | None:
    row = (
        await conn.execute(
            select(totp_secrets.c.secret, totp_secrets.c.enabled_time).where(
                totp_secrets.c.user_id == user_id
            )
        )
    ).first()
    return None if row is None else Totp(str(row[0]), row[1])


async def set_pending_totp(conn: AsyncConnection, user_id: int, secret: str) -> bool:
    """Keep ``secret`` as the user's TOTP secret waiting for its first code, in place of
    any other waiting one; False (nothing changed) when one is already in force."""
    await conn.execute(
        delete(totp_secrets).where(
            totp_secrets.c.user_id == user_id, totp_secrets.c.enabled_time.is_(None)
        )
    )
    try:
        async with conn.begin_nested():
            await conn.execute(
                insert(totp_secrets).values(user_id=user_id, secret=secret, created_time=now())
            )
    except IntegrityError:
        return False
    return True


async def enable_totp(conn: AsyncConnection, user_id: int, step: int) -> bool:
    """Put the waiting secret in force, its code of ``step`` taken; False if none waits."""
    result = await conn.execute(
        update(totp_secrets)
        .where(totp_secrets.c.user_id == user_id, totp_secrets.c.enabled_time.is_(None))
        .values(enabled_time=now(), last_step=step)
    )
    return bool(result.rowcount == 1)


async def take_step(conn: AsyncConnection, user_id: int, step: int) -> bool:
    """Accept the code of time step ``step`` once: False when a code of this step or a
    later one was accepted already (a replay), or no secret is in force."""
    result = await conn.execute(
        update(totp_secrets)
        .where(
            totp_secrets.c.user_id == user_id,
            totp_secrets.c.enabled_time.is_not(None),
            (totp_secrets.c.last_step.is_(None)) | (totp_secrets.c.last_step < step),
        )
        .values(last_step=step)
    )
    return bool(result.rowcount == 1)


# Recovery codes


async def replace_recovery_codes(
    conn: AsyncConnection, user_id: int, code_hashes: list[str]
) -> None:
    await conn.execute(delete(recovery_codes).where(recovery_codes.c.user_id == user_id))
    await conn.execute(
        insert(recovery_codes), [{"user_id": user_id, "code_hash": h} for h in code_hashes]
    )


async def use_recovery_code(conn: AsyncConnection, user_id: int, code_hash: str) -> bool:
    """Spend the code: True once, False for an unknown or spent one."""
    result = await conn.execute(
        delete(recovery_codes).where(
            recovery_codes.c.user_id == user_id, recovery_codes.c.code_hash == code_hash
        )
    )
    return bool(result.rowcount == 1)


async def recovery_codes_left(conn: AsyncConnection, user_id: int) -> int:
    count = await conn.scalar(
        select(func.count()).select_from(recovery_codes).where(recovery_codes.c.user_id == user_id)
    )
    return int(count or 0)


# Security keys

_KEY_COLUMNS = (
    security_keys.c.id,
    security_keys.c.credential_id,
    security_keys.c.public_key,
    security_keys.c.sign_count,
    security_keys.c.name,
    security_keys.c.created_time,
    security_keys.c.last_used_time,
)


async def add_key(
    conn: AsyncConnection,
    user_id: int,
    *,
    credential_id: str,
    public_key: str,
    sign_count: int,
    name: str,
) -> int | None:
    """The new key's id; None when this credential is registered already."""
    try:
        async with conn.begin_nested():
            result = await conn.execute(
                insert(security_keys)
                .values(
                    user_id=user_id,
                    credential_id=credential_id,
                    public_key=public_key,
                    sign_count=sign_count,
                    name=name,
                    created_time=now(),
                )
                .returning(security_keys.c.id)
            )
    except IntegrityError:
        return None
    return int(result.scalar_one())


async def keys(conn: AsyncConnection, user_id: int) -> list[SecurityKey]:
    """The user's keys, oldest first."""
    rows = await conn.execute(
        select(*_KEY_COLUMNS).where(security_keys.c.user_id == user_id).order_by(security_keys.c.id)
    )
    return [SecurityKey(*row) for row in rows]


async def count_keys(conn: AsyncConnection, user_id: int) -> int:
    count = await conn.scalar(
        select(func.count()).select_from(security_keys).where(security_keys.c.user_id == user_id)
    )
    return int(count or 0)


async def key_by_credential(
    conn: AsyncConnection, user_id: int, credential_id: str
) -> SecurityKey | None:
    row = (
        await conn.execute(
            select(*_KEY_COLUMNS).where(
                security_keys.c.user_id == user_id,
                security_keys.c.credential_id == credential_id,
            )
        )
    ).first()
    return None if row is None else SecurityKey(*row)


async def mark_key_used(conn: AsyncConnection, key_id: int, sign_count: int) -> None:
    await conn.execute(
        update(security_keys)
        .where(security_keys.c.id == key_id)
        .values(sign_count=sign_count, last_used_time=now())
    )


async def remove_key(conn: AsyncConnection, user_id: int, key_id: int) -> bool:
    result = await conn.execute(
        delete(security_keys).where(
            security_keys.c.user_id == user_id, security_keys.c.id == key_id
        )
    )
    return bool(result.rowcount == 1)


async def remove_all(conn: AsyncConnection, user_id: int) -> None:
    """Two-factor off: the secret, the keys, the recovery codes and any waiting state."""
    await conn.execute(delete(totp_secrets).where(totp_secrets.c.user_id == user_id))
    await conn.execute(delete(recovery_codes).where(recovery_codes.c.user_id == user_id))
    await conn.execute(delete(security_keys).where(security_keys.c.user_id == user_id))
    await conn.execute(delete(two_factor_pending).where(two_factor_pending.c.user_id == user_id))


async def is_on(conn: AsyncConnection, user_id: int) -> bool:
    """Whether signing in takes a second step: a TOTP secret in force, or a key."""
    enabled = select(totp_secrets.c.user_id).where(
        totp_secrets.c.user_id == user_id, totp_secrets.c.enabled_time.is_not(None)
    )
    keyed = select(security_keys.c.user_id).where(security_keys.c.user_id == user_id)
    row = (await conn.execute(enabled.union_all(keyed).limit(1))).first()
    return row is not None


# Pending ceremonies


async def start_pending(
    conn: AsyncConnection,
    token_hash: str,
    user_id: int,
    kind: str,
    *,
    lifetime: int,
    challenge: str | None = None,
) -> None:
    """A new waiting state; expired ones of anyone, and the user's earlier one of the same
    kind, go at the same time (one sign-in or registration waits at once)."""
    moment = now()
    await conn.execute(
        delete(two_factor_pending).where(
            (two_factor_pending.c.expires_time <= moment)
            | ((two_factor_pending.c.user_id == user_id) & (two_factor_pending.c.kind == kind))
        )
    )
    await conn.execute(
        insert(two_factor_pending).values(
            token_hash=token_hash,
            user_id=user_id,
            kind=kind,
            challenge=challenge,
            expires_time=moment + lifetime,
        )
    )


async def pending(conn: AsyncConnection, token_hash: str, kind: str) -> Pending | None:
    """The live waiting state of ``kind`` named by the token, or None."""
    row = (
        await conn.execute(
            select(
                two_factor_pending.c.user_id,
                two_factor_pending.c.challenge,
                two_factor_pending.c.failures,
            ).where(
                two_factor_pending.c.token_hash == token_hash,
                two_factor_pending.c.kind == kind,
                two_factor_pending.c.expires_time > now(),
            )
        )
    ).first()
    return None if row is None else Pending(int(row[0]), row[1], int(row[2]))


async def set_challenge(conn: AsyncConnection, token_hash: str, challenge: str) -> None:
    await conn.execute(
        update(two_factor_pending)
        .where(two_factor_pending.c.token_hash == token_hash)
        .values(challenge=challenge)
    )


async def count_failure(conn: AsyncConnection, token_hash: str, limit: int) -> bool:
    """Count a wrong second step; True while the state lives on, False once ``limit``
    failures have ended it."""
    await conn.execute(
        update(two_factor_pending)
        .where(two_factor_pending.c.token_hash == token_hash)
        .values(failures=two_factor_pending.c.failures + 1)
    )
    result = await conn.execute(
        delete(two_factor_pending).where(
            two_factor_pending.c.token_hash == token_hash,
            two_factor_pending.c.failures >= limit,
        )
    )
    return result.rowcount == 0


async def finish_pending(conn: AsyncConnection, token_hash: str, kind: str) -> bool:
    """End the live state: True for the one caller that ended it."""
    result = await conn.execute(
        delete(two_factor_pending).where(
            two_factor_pending.c.token_hash == token_hash,
            two_factor_pending.c.kind == kind,
            two_factor_pending.c.expires_time > now(),
        )
    )
    return bool(result.rowcount == 1)
