"""A user's mailboxes, and the mailboxes each address forwards to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.elements import ColumnElement

from maskmail.core.errors import (
    InvalidAddress,
    MailboxLimitReached,
    MailboxNotFound,
)
from maskmail.core.mailboxes import VERIFY_SECONDS, MailLimits, Proof
from maskmail.store import verification_mails
from maskmail.store.clock import now
from maskmail.store.owner_lock import lock_owner
from maskmail.store.tables import address_mailboxes, addresses, mailboxes


@dataclass(frozen=True, slots=True)
class Mailbox:
    id: int
    email: str
    verified: bool
    default: bool
    created_time: int

    def json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "email": self.email,
            "verified": self.verified,
            "default": self.default,
            "created_time": self.created_time,
        }


_COLUMNS = (
    mailboxes.c.id,
    mailboxes.c.email,
    mailboxes.c.verified,
    mailboxes.c.is_default,
    mailboxes.c.created_time,
)


def _record(row: Sequence[Any]) -> Mailbox:
    return Mailbox(int(row[0]), str(row[1]), bool(row[2]), bool(row[3]), int(row[4]))


def _not_found() -> MailboxNotFound:
    return MailboxNotFound("no such mailbox")


async def add_first(conn: AsyncConnection, user_id: int, email: str, created_time: int) -> None:
    """Mailbox one: the address the user was added with, verified and the default."""
    await conn.execute(_insert(user_id, email, created_time).values(verified=True, is_default=True))


def _insert(user_id: int, email: str, created_time: int) -> Insert:
    return insert(mailboxes).values(
        user_id=user_id, email=email, email_key=email.lower(), created_time=created_time
    )


async def list_mailboxes(conn: AsyncConnection, user_id: int) -> list[Mailbox]:
    """Oldest first."""
    rows = await conn.execute(
        select(*_COLUMNS).where(mailboxes.c.user_id == user_id).order_by(mailboxes.c.id)
    )
    return [_record(row) for row in rows]


async def get_mailbox(conn: AsyncConnection, user_id: int, mailbox_id: int) -> Mailbox:
    row = (
        await conn.execute(
            select(*_COLUMNS).where(mailboxes.c.id == mailbox_id, mailboxes.c.user_id == user_id)
        )
    ).first()
    if row is None:
        raise _not_found()
    return _record(row)


async def add_mailbox(
    conn: AsyncConnection,
    user_id: int,
    email: str,
    proof: Proof,
    *,
    limit: int,
    mails: MailLimits = verification_mails.UNLIMITED,
) -> Mailbox:
    """An unverified mailbox, under ``limit``, its verification message counted under
    ``mails``; the same mailbox twice (in any case) is a 422."""
    await lock_owner(conn, user_id)
    count = await conn.scalar(
        select(func.count()).select_from(mailboxes).where(mailboxes.c.user_id == user_id)
    )
    if int(count or 0) >= limit:
        raise MailboxLimitReached(f"a user may have at most {limit} mailboxes")
    created = now()
    await verification_mails.count_one(conn, user_id, email, mails, created)
    try:
        async with conn.begin_nested():
            result = await conn.execute(
                _insert(user_id, email, created)
                .values(
                    token_hash=proof.token_hash,
                    code_hash=proof.code_hash,
                    expires_time=created + VERIFY_SECONDS,
                )
                .returning(mailboxes.c.id)
            )
    except IntegrityError as exc:
        raise InvalidAddress("you have this mailbox already", {"field": "email"}) from exc
    return Mailbox(int(result.scalar_one()), email, False, False, created)


async def _mark_verified(conn: AsyncConnection, *where: ColumnElement[bool]) -> Mailbox:
    """Verify the pending mailbox ``where`` selects; the link and code are spent."""
    row = (
        await conn.execute(
            update(mailboxes)
            .where(*where, mailboxes.c.verified.is_(False), mailboxes.c.expires_time >= now())
            .values(verified=True, token_hash=None, code_hash=None, expires_time=None)
            .returning(*_COLUMNS)
        )
    ).first()
    if row is None:
        raise _not_found()
    return _record(row)


async def verify_by_token(conn: AsyncConnection, token_hash: str) -> Mailbox:
    """The link: single use, until it expires; anything else is not found."""
    return await _mark_verified(conn, mailboxes.c.token_hash == token_hash)


async def verify_by_code(
    conn: AsyncConnection, user_id: int, mailbox_id: int, code_hash: str
) -> Mailbox:
    """The code typed in; a wrong one raises InvalidAddress (the caller throttles)."""
    mailbox = await get_mailbox(conn, user_id, mailbox_id)
    if mailbox.verified:
        return mailbox
    try:
        return await _mark_verified(
            conn,
            mailboxes.c.id == mailbox_id,
            mailboxes.c.user_id == user_id,
            mailboxes.c.code_hash == code_hash,
        )
    except MailboxNotFound as exc:
        raise InvalidAddress("wrong or expired code", {"field": "code"}) from exc


async def set_default(conn: AsyncConnection, user_id: int, mailbox_id: int) -> Mailbox:
    await lock_owner(conn, user_id)
    mailbox = await get_mailbox(conn, user_id, mailbox_id)
    if not mailbox.verified:
        raise InvalidAddress("only a verified mailbox can be the default", {"field": "default"})
    await conn.execute(
        update(mailboxes)
        .where(mailboxes.c.user_id == user_id)
        .values(is_default=mailboxes.c.id == mailbox_id)
    )
    return Mailbox(mailbox.id, mailbox.email, True, True, mailbox.created_time)


async def delete_mailbox(conn: AsyncConnection, user_id: int, mailbox_id: int) -> None:
    """Gone; the addresses that forwarded only to it forward to the default mailbox."""
    await lock_owner(conn, user_id)
    mailbox = await get_mailbox(conn, user_id, mailbox_id)
    if mailbox.default:
        raise InvalidAddress("the default mailbox cannot be deleted", {"field": "id"})
    await conn.execute(
        delete(address_mailboxes).where(address_mailboxes.c.mailbox_id == mailbox_id)
    )
    await conn.execute(delete(mailboxes).where(mailboxes.c.id == mailbox_id))


async def address_mailbox_ids(conn: AsyncConnection, user_id: int, address_id: int) -> list[int]:
    """The mailboxes the address (checked to be the user's by the caller) forwards to;
    none chosen means the default one."""
    chosen = await conn.scalars(
        select(address_mailboxes.c.mailbox_id)
        .where(address_mailboxes.c.address_id == address_id)
        .order_by(address_mailboxes.c.mailbox_id)
    )
    ids = [int(i) for i in chosen]
    if ids:
        return ids
    default = await conn.scalar(
        select(mailboxes.c.id).where(mailboxes.c.user_id == user_id, mailboxes.c.is_default)
    )
    return [int(default)] if default is not None else []


async def set_address_mailboxes(
    conn: AsyncConnection, user_id: int, address_id: int, mailbox_ids: Sequence[int]
) -> list[int]:
    """Only the owner's verified mailboxes, at least one; the caller checked the address."""
    wanted = sorted(set(mailbox_ids))
    if not wanted:
        raise InvalidAddress("choose at least one mailbox", {"field": "mailbox_ids"})
    await lock_owner(conn, user_id)
    found = set(
        await conn.scalars(
            select(mailboxes.c.id).where(
                mailboxes.c.id.in_(wanted),
                mailboxes.c.user_id == user_id,
                mailboxes.c.verified.is_(True),
            )
        )
    )
    if len(found) != len(wanted):
        raise InvalidAddress(
            "every mailbox must be one of yours, and verified", {"field": "mailbox_ids"}
        )
    await conn.execute(
        delete(address_mailboxes).where(address_mailboxes.c.address_id == address_id)
    )
    await conn.execute(
        insert(address_mailboxes), [{"address_id": address_id, "mailbox_id": m} for m in wanted]
    )
    return wanted


@dataclass(frozen=True, slots=True)
class BounceState:
    paused: bool
    # Where the owner hears of a pause: None when they have no other mailbox to hear at.
    notify: str | None
    # Bounces received before this belong to an earlier holder of the id, not to it.
    created_time: int


async def lock_for_bounce(
    conn: AsyncConnection, address_id: int, mailbox_id: int, made_before: int
) -> BounceState | None:
    """The mailbox of the address's owner, locked; None when it is gone, or was made
    after ``made_before`` (it then holds the id of a mailbox that was gone).

    The owner hears of a pause at their default mailbox, unless that is the bouncing one
    or paused itself: then at their oldest other verified mailbox that is not paused, if
    any."""
    owner = select(addresses.c.user_id).where(addresses.c.id == address_id).scalar_subquery()
    row = (
        await conn.execute(
            select(mailboxes.c.paused_time, mailboxes.c.created_time)
            .where(
                mailboxes.c.id == mailbox_id,
                mailboxes.c.user_id == owner,
                mailboxes.c.created_time < made_before,
            )
            .with_for_update()
        )
    ).first()
    if row is None:
        return None
    notify = await conn.scalar(
        select(mailboxes.c.email)
        .where(
            mailboxes.c.user_id == owner,
            mailboxes.c.id != mailbox_id,
            mailboxes.c.verified,
            mailboxes.c.paused_time.is_(None),
        )
        .order_by(mailboxes.c.is_default.desc(), mailboxes.c.id)
        .limit(1)
    )
    return BounceState(row.paused_time is not None, notify, row.created_time)


async def pause(conn: AsyncConnection, mailbox_id: int, when: int) -> None:
    """Hard bounces stop forwarding to the mailbox."""
    await conn.execute(
        update(mailboxes).where(mailboxes.c.id == mailbox_id).values(paused_time=when)
    )


async def resume(conn: AsyncConnection, user_id: int, mailbox_id: int) -> None:
    """Forwarding to the mailbox resumes (``store.bounces.resume_mailbox`` forgives)."""
    await get_mailbox(conn, user_id, mailbox_id)
    await conn.execute(
        update(mailboxes).where(mailboxes.c.id == mailbox_id).values(paused_time=None)
    )
