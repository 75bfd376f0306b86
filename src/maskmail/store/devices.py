"""The browsers each user has signed in from, by the SHA-256 of their device cookie."""

from __future__ import annotations

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store.clock import now
from maskmail.store.tables import known_devices


async def seen(conn: AsyncConnection, user_id: int, device_hash: str, *, most: int) -> str:
    """Note a sign-in from a device; the answer says what it was to the user:

    - ``"known"``: signed in from it before (its last sign-in is now);
    - ``"first"``: the user had no device yet (a new account, or the first sign-in since
      devices are remembered): there is nothing to compare it with;
    - ``"new"``: the user has other devices, not this one.

    A user keeps at most ``most`` devices: the one seen longest ago is forgotten first.
    """
    at = now()
    mine = known_devices.c.user_id == user_id
    touched = await conn.execute(
        update(known_devices)
        .where(mine, known_devices.c.device_hash == device_hash)
        .values(last_seen_time=at)
    )
    if touched.rowcount:
        return "known"
    kept = (
        await conn.execute(
            select(known_devices.c.device_hash)
            .where(mine)
            .order_by(known_devices.c.last_seen_time.desc(), known_devices.c.device_hash)
        )
    ).all()
    forgotten = [row[0] for row in kept[max(0, most - 1) :]]
    if forgotten:
        await conn.execute(
            delete(known_devices).where(mine, known_devices.c.device_hash.in_(forgotten))
        )
    try:
        # A savepoint: the same browser signing in twice at once adds it once.
        async with conn.begin_nested():
            await conn.execute(
                insert(known_devices).values(
                    user_id=user_id, device_hash=device_hash, created_time=at, last_seen_time=at
                )
            )
    except IntegrityError:
        return "known"
    return "new" if kept else "first"
