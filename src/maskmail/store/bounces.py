"""Bounces: recorded against a relay address (and its mailbox), counted, forgiven; a
mailbox's pause. The pause of an address is ``store.address_bounces``, for the address's
row is written by ``store.addresses`` alone."""

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

BY_ID = addresses.c.id == bindparam("address_id")
# A bounce names its address by id and the day it was signed: an address made after that
# day holds the id of one that was gone (before migration 0013, SQLite handed ids out
# again), and the bounce is not its.
MADE_BEFORE = addresses.c.created_time < bindparam("made_before")
ANY_TIME = 2**62
_EXISTS = select(addresses.c.id).where(BY_ID, MADE_BEFORE)
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


async def add(
    conn: AsyncConnection,
    address_id: int,
    bounce: dsn.Bounce,
    *,
    when: int,
    mailbox_id: int | None = None,
    forgiven: bool = False,
) -> None:
    """Record one bounce against the address (and the mailbox that bounced, if any)."""
    await conn.execute(
        insert(bounces).values(
            address_id=address_id,
            mailbox_id=mailbox_id,
            received_time=when,
            kind=bounce.kind.value,
            status=bounce.status[:16],
            forgiven=forgiven,
        )
    )


async def hard_recent(conn: AsyncConnection, address_id: int, when: int) -> int:
    """The address's hard bounces in the window before ``when`` that count: not forgiven,
    and not a mailbox's."""
    params = {"address_id": address_id, "since": when - dsn.WINDOW}
    return int(await conn.scalar(_HARD_RECENT, params) or 0)


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
    ``address_bounces.record_bounce`` locks the address. A bounce for a mailbox that is
    gone is listed under the address, forgiven: it counts against neither.
    AddressNotFound when the address is gone."""
    if not await address_exists(conn, address_id, made_before=made_before):
        raise AddressNotFound("no such address")
    state = await mailboxes.lock_for_bounce(conn, address_id, mailbox_id, made_before)
    await add(
        conn,
        address_id,
        bounce,
        when=when,
        mailbox_id=mailbox_id if state is not None else None,
        forgiven=state is None,
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
    """Forward to the mailbox again, and forgive its bounces as ``addresses.lift_pause`` does, so
    that the next single bounce does not pause it again; MailboxNotFound for anyone else."""
    await mailboxes.resume(conn, user_id, mailbox_id)
    await conn.execute(
        update(bounces)
        .where(bounces.c.mailbox_id == mailbox_id, bounces.c.forgiven == False)  # noqa: E712
        .values(forgiven=True)
    )


async def forgive_address(conn: AsyncConnection, address_id: int) -> None:
    """Forgive the address's bounces, so that the next single bounce does not pause it
    again (``addresses.lift_pause``)."""
    await conn.execute(
        update(bounces)
        .where(
            and_(bounces.c.address_id == address_id, bounces.c.forgiven == False)  # noqa: E712
        )
        .values(forgiven=True)
    )


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
    hard = await hard_recent(conn, address_id, now)
    rows = (await conn.execute(_LATEST, {"address_id": address_id})).all()
    return BounceReport(
        paused_time=paused.paused_time,
        hard_bounces=hard,
        latest=[BounceRow(r.received_time, r.kind, r.status, bool(r.forgiven)) for r in rows],
    )
