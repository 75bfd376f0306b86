"""Bounces: recorded against a relay address, counted, and the pause they lead to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import and_, bindparam, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import dsn
from maskmail.core.errors import AddressNotFound
from maskmail.store import mailboxes
from maskmail.store.tables import addresses, bounces

LISTED = 50

_by_id = addresses.c.id == bindparam("address_id")
# A bounce names its address by id and the day it was signed: an address made after that
# day holds the id of one that was gone (before migration 0013, SQLite handed ids out
# again), and the bounce is not its.
_made_before = addresses.c.created_time < bindparam("made_before")
ANY_TIME = 2**62
_LOCK = select(addresses.c.paused_time).where(_by_id, _made_before).with_for_update()
_EXISTS = select(addresses.c.id).where(_by_id, _made_before)
_HARD_RECENT = (
    select(func.count())
    .select_from(bounces)
    .where(
        bounces.c.address_id == bindparam("address_id"),
        bounces.c.mailbox_id.is_(None),
        bounces.c.kind == dsn.Kind.HARD.value,
        bounces.c.forgiven == False,  # noqa: E712 (SQL, not Python)
        bounces.c.received_time > bindparam("since"),
    )
)
_LATEST = (
    select(bounces.c.received_time, bounces.c.kind, bounces.c.status, bounces.c.forgiven)
    .where(bounces.c.address_id == bindparam("address_id"))
    .order_by(bounces.c.received_time.desc(), bounces.c.id.desc())
    .limit(LISTED)
)


@dataclass(frozen=True, slots=True)
class Recorded:
    """What one bounce did: the hard bounces now counting, and whether it paused."""

    hard_bounces: int
    paused: bool


@dataclass(frozen=True, slots=True)
class BounceRow:
    received_time: int
    kind: str
    status: str
    forgiven: bool


@dataclass(frozen=True, slots=True)
class BounceReport:
    paused_time: int | None
    hard_bounces: int
    latest: Sequence[BounceRow]


async def address_exists(
    conn: AsyncConnection, address_id: int, *, made_before: int = ANY_TIME
) -> bool:
    found = await conn.scalar(_EXISTS, {"address_id": address_id, "made_before": made_before})
    return found is not None


async def record_bounce(
    conn: AsyncConnection,
    address_id: int,
    bounce: dsn.Bounce,
    *,
    threshold: int,
    when: int,
    made_before: int = ANY_TIME,
) -> Recorded:
    """Record a bounce and pause the address when it reaches the threshold.

    The address row is locked first (FOR UPDATE on PostgreSQL; SQLite's BEGIN IMMEDIATE
    already serialises writers), so that concurrent bounces count one after another:
    none of them can miss the threshold, and only one of them pauses.
    """
    params = {"address_id": address_id, "made_before": made_before}
    locked = (await conn.execute(_LOCK, params)).first()
    if locked is None:
        raise AddressNotFound("no such address")
    await conn.execute(
        insert(bounces).values(
            address_id=address_id,
            received_time=when,
            kind=bounce.kind.value,
            status=bounce.status[:16],
            forgiven=False,
        )
    )
    hard = int(
        await conn.scalar(_HARD_RECENT, {"address_id": address_id, "since": when - dsn.WINDOW}) or 0
    )
    pause = bounce.kind is dsn.Kind.HARD and dsn.should_pause(
        hard, threshold, paused=locked.paused_time is not None
    )
    if pause:
        # A pause is a change like any other: it stamps updated_time.
        await conn.execute(
            update(addresses)
            .where(addresses.c.id == address_id)
            .values(enabled=False, paused_time=when, updated_time=when)
        )
    return Recorded(hard_bounces=hard, paused=pause)


@dataclass(frozen=True, slots=True)
class MailboxPaused:
    """A mailbox that hard bounces paused, and where to tell its owner (None: nowhere
    but the bouncing mailbox itself)."""

    mailbox_id: int
    notify: str | None


async def record_mailbox_bounce(
    conn: AsyncConnection,
    address_id: int,
    mailbox_id: int,
    bounce: dsn.Bounce,
    *,
    threshold: int,
    when: int,
    made_before: int = ANY_TIME,
) -> MailboxPaused | None:
    """Record a bounce of one copy against its mailbox, and pause the mailbox at the
    threshold; the pause, if this bounce made it. The mailbox row is locked first, as
    ``record_bounce`` locks the address. A bounce for a mailbox that is gone is listed
    under the address, forgiven: it counts against neither. AddressNotFound when the
    address is gone."""
    if not await address_exists(conn, address_id, made_before=made_before):
        raise AddressNotFound("no such address")
    state = await mailboxes.lock_for_bounce(conn, address_id, mailbox_id, made_before)
    await conn.execute(
        insert(bounces).values(
            address_id=address_id,
            mailbox_id=mailbox_id if state is not None else None,
            received_time=when,
            kind=bounce.kind.value,
            status=bounce.status[:16],
            forgiven=state is None,
        )
    )
    if state is None:  # the mailbox is gone: nothing left to pause
        return None
    hard = int(
        await conn.scalar(
            select(func.count())
            .select_from(bounces)
            .where(
                bounces.c.mailbox_id == mailbox_id,
                bounces.c.kind == dsn.Kind.HARD.value,
                bounces.c.forgiven == False,  # noqa: E712 (SQL, not Python)
                bounces.c.received_time > when - dsn.WINDOW,
                # Older than the mailbox: left by a mailbox that had its id before
                # migration 0013 made SQLite's ids unique for good.
                bounces.c.received_time >= state.created_time,
            )
        )
        or 0
    )
    if bounce.kind is not dsn.Kind.HARD or not dsn.should_pause(
        hard, threshold, paused=state.paused
    ):
        return None
    await mailboxes.pause(conn, mailbox_id, when)
    return MailboxPaused(mailbox_id, state.notify)


async def resume_mailbox(conn: AsyncConnection, user_id: int, mailbox_id: int) -> None:
    """Forward to the mailbox again, and forgive its bounces as ``lift_pause`` does, so
    that the next single bounce does not pause it again; MailboxNotFound for anyone else."""
    await mailboxes.resume(conn, user_id, mailbox_id)
    await conn.execute(
        update(bounces)
        .where(bounces.c.mailbox_id == mailbox_id, bounces.c.forgiven == False)  # noqa: E712
        .values(forgiven=True)
    )


async def lift_pause(conn: AsyncConnection, address_id: int) -> bool:
    """Clear a pause, and forgive the bounces that led to it, so that the next single
    bounce does not pause the address again. False when it was not paused."""
    lifted = await conn.execute(
        update(addresses)
        .where(addresses.c.id == address_id, addresses.c.paused_time.is_not(None))
        .values(paused_time=None)
        .returning(addresses.c.id)
    )
    if lifted.first() is None:
        return False
    await conn.execute(
        update(bounces)
        .where(
            and_(bounces.c.address_id == address_id, bounces.c.forgiven == False)  # noqa: E712
        )
        .values(forgiven=True)
    )
    return True


async def bounce_report(
    conn: AsyncConnection, user_id: int, address_id: int, *, now: int
) -> BounceReport:
    """The owner's view of one address's bounces; AddressNotFound for anyone else."""
    paused = (
        await conn.execute(
            select(addresses.c.paused_time).where(
                addresses.c.id == address_id, addresses.c.user_id == user_id
            )
        )
    ).first()
    if paused is None:
        raise AddressNotFound("no such address")
    params = {"address_id": address_id, "since": now - dsn.WINDOW}
    hard = int(await conn.scalar(_HARD_RECENT, params) or 0)
    rows = (await conn.execute(_LATEST, {"address_id": address_id})).all()
    return BounceReport(
        paused_time=paused.paused_time,
        hard_bounces=hard,
        latest=[BounceRow(r.received_time, r.kind, r.status, bool(r.forgiven)) for r in rows],
    )
