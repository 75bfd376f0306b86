"""The verification messages each user had sent, counted per address and per user in a
day, so that deleting and re-adding a mailbox sends no more of them."""

from __future__ import annotations

from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.mailboxes import MailLimits, address_key, check_mail_rate
from maskmail.core.windows import DAY
from maskmail.store.tables import verification_mails

# No limit: for callers that send no message (tests, tools).
UNLIMITED = MailLimits(0, 0)


async def count_one(
    conn: AsyncConnection, user_id: int, email: str, limits: MailLimits, when: int
) -> None:
    """Count one more message to ``email``, or raise RateLimited past a limit (and write
    nothing). The caller holds the owner's row (``lock_owner``), so that concurrent adds
    count one after the other, and sends the message in the same transaction."""
    await conn.execute(
        delete(verification_mails).where(
            verification_mails.c.user_id == user_id, verification_mails.c.sent_time <= when - DAY
        )
    )
    rows = await conn.execute(
        select(verification_mails.c.address_hash, verification_mails.c.sent_time)
        .where(verification_mails.c.user_id == user_id)
        .order_by(verification_mails.c.sent_time)
    )
    key = address_key(email)
    check_mail_rate([(str(k), int(t)) for k, t in rows], key, limits, when)
    await conn.execute(
        insert(verification_mails).values(user_id=user_id, address_hash=key, sent_time=when)
    )
