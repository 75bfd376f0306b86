"""The OpenPGP key a mailbox may hold (one at most), and whether encrypting to it failed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.errors import MailboxNotFound
from maskmail.core.pgp import KeyFacts
from maskmail.store.clock import now
from maskmail.store.mailboxes import get_mailbox
from maskmail.store.tables import mailbox_keys, mailboxes


@dataclass(frozen=True, slots=True)
class MailboxKey:
    mailbox_id: int
    fingerprint: str
    encrypt_subject: bool
    created_time: int
    expires_time: int | None

    def json(self) -> dict[str, object]:
        return {
            "mailbox_id": self.mailbox_id,
            "fingerprint": self.fingerprint,
            "encrypt_subject": self.encrypt_subject,
            "created_time": self.created_time,
            "expires_time": self.expires_time,
        }


_COLUMNS = (
    mailbox_keys.c.mailbox_id,
    mailbox_keys.c.fingerprint,
    mailbox_keys.c.encrypt_subject,
    mailbox_keys.c.created_time,
    mailbox_keys.c.expires_time,
)


async def get_key(conn: AsyncConnection, user_id: int, mailbox_id: int) -> MailboxKey:
    """The key of one of the user's mailboxes; not found when it has none."""
    await get_mailbox(conn, user_id, mailbox_id)
    row = (
        await conn.execute(select(*_COLUMNS).where(mailbox_keys.c.mailbox_id == mailbox_id))
    ).first()
    if row is None:
        raise MailboxNotFound("this mailbox has no PGP key")
    return _key(row)


def _key(row: Any) -> MailboxKey:
    return MailboxKey(int(row[0]), str(row[1]), bool(row[2]), int(row[3]), row[4])


async def keys_of(conn: AsyncConnection, user_id: int) -> dict[int, MailboxKey]:
    """The keys of all the user's mailboxes, by mailbox id (the dashboard's list)."""
    rows = await conn.execute(
        select(*_COLUMNS)
        .select_from(mailbox_keys.join(mailboxes, mailboxes.c.id == mailbox_keys.c.mailbox_id))
        .where(mailboxes.c.user_id == user_id)
    )
    return {int(row[0]): _key(row) for row in rows}


async def set_key(
    conn: AsyncConnection,
    user_id: int,
    mailbox_id: int,
    armored: str,
    facts: KeyFacts,
    encrypt_subject: bool | None,
) -> MailboxKey:
    """The mailbox's key, replacing any it had; ``encrypt_subject`` None keeps the old
    choice (off for a first key). A new key starts with no failure on record."""
    await get_mailbox(conn, user_id, mailbox_id)
    kept = await conn.scalar(
        select(mailbox_keys.c.encrypt_subject).where(mailbox_keys.c.mailbox_id == mailbox_id)
    )
    subject = bool(kept) if encrypt_subject is None else encrypt_subject
    created = now()
    await conn.execute(delete(mailbox_keys).where(mailbox_keys.c.mailbox_id == mailbox_id))
    await conn.execute(
        insert(mailbox_keys).values(
            mailbox_id=mailbox_id,
            public_key=armored,
            fingerprint=facts.fingerprint,
            encrypt_subject=subject,
            created_time=created,
            expires_time=facts.expires_time,
        )
    )
    return MailboxKey(mailbox_id, facts.fingerprint, subject, created, facts.expires_time)


async def set_encrypt_subject(
    conn: AsyncConnection, user_id: int, mailbox_id: int, value: bool
) -> MailboxKey:
    await get_key(conn, user_id, mailbox_id)
    await conn.execute(
        update(mailbox_keys)
        .where(mailbox_keys.c.mailbox_id == mailbox_id)
        .values(encrypt_subject=value)
    )
    return await get_key(conn, user_id, mailbox_id)


async def delete_key(conn: AsyncConnection, user_id: int, mailbox_id: int) -> None:
    await get_key(conn, user_id, mailbox_id)
    await conn.execute(delete(mailbox_keys).where(mailbox_keys.c.mailbox_id == mailbox_id))


async def claim_failure_notice(
    conn: AsyncConnection, mailbox_id: int, fingerprint: str, when: int
) -> bool:
    """Record that encrypting to this key failed; True only for the first caller since
    the last success, who tells the owner (inside the same transaction, so a notice that
    cannot be sent leaves the claim for the next retry)."""
    result = await conn.execute(
        update(mailbox_keys)
        .where(
            mailbox_keys.c.mailbox_id == mailbox_id,
            mailbox_keys.c.fingerprint == fingerprint,
            mailbox_keys.c.failed_time.is_(None),
        )
        .values(failed_time=when)
    )
    return result.rowcount == 1


async def clear_failure(conn: AsyncConnection, mailbox_id: int, fingerprint: str) -> None:
    """Encrypting works again: a later failure is news to the owner."""
    await conn.execute(
        update(mailbox_keys)
        .where(mailbox_keys.c.mailbox_id == mailbox_id, mailbox_keys.c.fingerprint == fingerprint)
        .values(failed_time=None)
    )
