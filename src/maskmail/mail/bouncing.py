"""Bounces that come back to a signed bounce address: verified, recorded, never answered.

Every forward leaves with a ``bounce+<id>.<day>.<signature>`` envelope sender. What
comes back to it is refused at RCPT when the signature is forged or too old, and
otherwise accepted, recorded against the relay address, and dropped. Nothing is ever
sent in return: no bounce of a bounce (backscatter), no forward, so no loop.
"""

from __future__ import annotations

import asyncio
import logging

from maskmail.core import bounce_addresses, mailboxes
from maskmail.core.dsn import Bounce
from maskmail.core.envelope import Mailbox
from maskmail.core.errors import (
    AddressNotFound,
    DeliveryDeferred,
    DeliveryRefused,
)
from maskmail.mail import smtp_replies
from maskmail.mail.context import MailContext
from maskmail.mail.dsn import read_bounce
from maskmail.store import address_bounces
from maskmail.store import bounces as store
from maskmail.store.engine import transaction

log = logging.getLogger(__name__)


def _bounced(ctx: MailContext, mailbox: Mailbox) -> bounce_addresses.BounceOf:
    now = int(ctx.clock().timestamp())
    found = bounce_addresses.bounced(mailbox.local, now, ctx.bounce_secret)
    if found is None:
        # Forged, tampered with, or older than its week: no such address here. Not
        # "Relaying denied": the domain is ours, and the answer is the one an unknown
        # relay address gets, so a prober learns nothing from the shape.
        raise AddressNotFound("not a bounce address of ours")
    return found


async def bounce_recipient(ctx: MailContext, mailbox: Mailbox) -> int:
    """The relay address a bounce recipient stands for; AddressNotFound (550 5.1.1) for
    a bad or expired signature, and when the relay address is gone."""
    found = _bounced(ctx, mailbox)
    async with transaction(ctx.engine, readonly=True) as conn:
        if not await store.address_exists(conn, found.address_id, made_before=found.made_before):
            raise AddressNotFound("no such address")
    return found.address_id


async def take_bounce(ctx: MailContext, mailbox: Mailbox, raw: bytes) -> str:
    """Record the bounce for ``mailbox`` (checked again: time passed since RCPT), pause
    the address at the threshold, and answer with the SMTP line. Never sends mail."""
    found = _bounced(ctx, mailbox)
    address_id = found.address_id
    # Detectors scan the whole message; a large one must not stall other sessions.
    bounce = await asyncio.to_thread(read_bounce, raw)
    if found.mailbox_id is not None:
        await _mailbox_bounce(ctx, found, found.mailbox_id, bounce)
        return smtp_replies.ACCEPTED
    async with transaction(ctx.engine) as conn:
        recorded = await address_bounces.record_bounce(
            conn,
            address_id,
            bounce,
            threshold=ctx.bounce_pause_threshold,
            when=int(ctx.clock().timestamp()),
            made_before=found.made_before,
        )
    log.info(
        "%s bounce (%s) for address %d; %d hard in 24h",
        bounce.kind,
        bounce.status,
        address_id,
        recorded.hard_bounces,
    )
    if recorded.paused:
        log.warning("address %d paused after %d hard bounces", address_id, recorded.hard_bounces)
    return smtp_replies.ACCEPTED


async def _mailbox_bounce(
    ctx: MailContext, found: bounce_addresses.BounceOf, mailbox_id: int, bounce: Bounce
) -> None:
    """A copy to one of several mailboxes came back: it counts against that mailbox, and
    at the threshold forwarding to it stops and the owner hears of it at another of their
    mailboxes (``store.mailboxes.lock_for_bounce``). The address stays enabled for its
    other mailboxes."""
    when = int(ctx.clock().timestamp())
    async with transaction(ctx.engine) as conn:
        paused = await store.record_mailbox_bounce(
            conn,
            found.address_id,
            mailbox_id,
            bounce,
            threshold=ctx.bounce_pause_threshold,
            when=when,
            made_before=found.made_before,
        )
    log.info("%s bounce (%s) for mailbox %d", bounce.kind, bounce.status, mailbox_id)
    if paused is None:
        return
    log.warning("mailbox %d paused after hard bounces", mailbox_id)
    if paused.notify is None:
        # Its owner has no other mailbox; the dashboard and the API show the pause.
        return
    notice = mailboxes.pause_notice(
        to=paused.notify,
        sender=f"mailboxes@{ctx.domain}",
        mailbox_id=mailbox_id,
        when=when,
    )
    if ctx.signer is not None:
        notice = await ctx.signer.sign(notice)
    try:
        # The null sender: a notice that bounces in turn comes back to nobody.
        await ctx.outbound.deliver(notice, sender="", recipient=paused.notify)
    except (DeliveryDeferred, DeliveryRefused) as exc:
        log.warning("pause notice for mailbox %d not delivered: %s", mailbox_id, exc.message)
