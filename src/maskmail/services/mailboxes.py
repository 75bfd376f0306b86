"""Adding a mailbox and verifying it by its code: the API's and the dashboard's way."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.config import Settings
from maskmail.core import mailboxes as rules
from maskmail.core.errors import DeliveryDeferred, RateLimited
from maskmail.core.windows import in_words
from maskmail.services.relay_domains import relay_domains
from maskmail.services.sending import Sender
from maskmail.services.user_limits import mailbox_limit
from maskmail.store import mailboxes as store
from maskmail.store.mailboxes import Mailbox


class Limiter(Protocol):
    """Counts one attempt under a name, or raises RateLimited."""

    async def hit(self, identifier: str) -> None: ...


async def add_and_ask(
    conn: AsyncConnection,
    settings: Settings,
    user_id: int,
    email: str,
    *,
    sender: Sender | None,
    link_for: Callable[[str], str],
) -> Mailbox:
    """Add an unverified mailbox and mail it the link (``link_for(token)``, as the owner
    will open it) and the code."""
    email = rules.new_mailbox(email, await relay_domains(conn, settings.domain))
    proof = rules.new_proof()
    mails = rules.MailLimits(settings.mailbox_verify_per_address, settings.mailbox_verify_per_user)
    mailbox = await store.add_mailbox(
        conn, user_id, email, proof, limit=await mailbox_limit(conn, user_id, settings), mails=mails
    )
    message = rules.verification_message(
        to=email,
        sender=f"mailboxes@{settings.domain}",
        link=link_for(proof.token),
        code=proof.code,
        when=time.time(),
    )
    # Inside the transaction: a message the outbound path refuses adds no mailbox.
    if sender is None:
        raise DeliveryDeferred("this server has no outbound path for verification mail")
    await sender.deliver(message, sender="", recipient=email)
    return mailbox


async def check_code(
    conn: AsyncConnection, user_id: int, mailbox_id: int, code: str, *, limiter: Limiter
) -> Mailbox:
    """Verify by the code, each attempt counted."""
    mailbox = await store.get_mailbox(conn, user_id, mailbox_id)
    # Per owner and address, not per row: deleting and re-adding the mailbox gives no
    # new tries, and nobody else can use up the owner's.
    key = rules.address_key(mailbox.email)
    try:
        await limiter.hit(f"mailbox:{user_id}:{key}")
    except RateLimited as exc:
        wait = in_words(exc.retry_after)
        raise RateLimited(
            f"five codes were tried for this mailbox within an hour; try again in {wait}",
            exc.retry_after,
        ) from exc
    return await store.verify_by_code(conn, user_id, mailbox_id, rules.digest(code))


async def verify_by_link(conn: AsyncConnection, token: str) -> Mailbox:
    """Verify the mailbox whose mailed link carries ``token``."""
    return await store.verify_by_token(conn, rules.digest(token))
