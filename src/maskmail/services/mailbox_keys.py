"""Setting a mailbox's OpenPGP key: checked, then kept (the API's and the dashboard's way)."""

from __future__ import annotations

import asyncio

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.config import Settings
from maskmail.core.errors import ToolUnavailable
from maskmail.openpgp import check_key
from maskmail.store import mailbox_keys
from maskmail.store import mailboxes as store
from maskmail.store.mailbox_keys import MailboxKey


async def put_key(
    conn: AsyncConnection,
    user_id: int,
    mailbox_id: int,
    armored: str,
    encrypt_subject: bool | None,
    settings: Settings,
) -> MailboxKey:
    """Check the key and keep it."""
    await store.get_mailbox(conn, user_id, mailbox_id)
    # In a thread, so that MASKMAIL_PGP_TIMEOUT can give up on it.
    try:
        facts = await asyncio.wait_for(asyncio.to_thread(check_key, armored), settings.pgp_timeout)
    except TimeoutError:
        # Not chained: a TimeoutError behind an error reads as a database outage.
        raise ToolUnavailable("the key could not be checked in time; try again") from None
    return await mailbox_keys.set_key(
        conn, user_id, mailbox_id, armored.strip(), facts, encrypt_subject
    )
