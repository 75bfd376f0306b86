"""Mail to a relay address: looked up, judged, forwarded to the owner, and counted."""

from __future__ import annotations

import logging
from typing import Any

from maskmail.core import bounces, envelope
from maskmail.core.envelope import Mailbox
from maskmail.core.errors import (
    AddressNotFound,
    DeliveryDeferred,
    DeliveryRefused,
    MaskmailError,
    RelayDenied,
)
from maskmail.core.verdict import Action, Facts, Verdict, decide
from maskmail.mail import rewrite
from maskmail.mail.context import MailContext, envelope_sender, peer_ip
from maskmail.mail.counting import count
from maskmail.store import mailflow

log = logging.getLogger(__name__)


def owner_is_relay(ctx: MailContext, owner_mailbox: str) -> bool:
    try:
        return envelope.is_ours(envelope.parse_mailbox(owner_mailbox), ctx.domain)
    except MaskmailError:
        return False


async def _find(
    ctx: MailContext, mailbox: Mailbox, sender: str | None = None
) -> mailflow.Recipient:
    async with ctx.raw() as raw:
        found = await mailflow.find_recipient(raw, mailbox.local, mailbox.domain, sender=sender)
    if found is None:
        raise AddressNotFound("no such address")
    return found


async def check_recipient(ctx: MailContext, mailbox: Mailbox) -> None:
    """At RCPT: refuse what is already known to be refused."""
    found = await _find(ctx, mailbox)
    if owner_is_relay(ctx, found.owner_mailbox):
        raise RelayDenied("forwarding would loop")


async def forward(ctx: MailContext, session: Any, env: Any, mailbox: Mailbox) -> None:
    """Deliver, block or drop one message; return once it is done and counted."""
    mail_from = envelope_sender(env)
    raw: bytes = env.original_content
    header_block, _ = rewrite.split_message(raw)
    headers = rewrite.parse_headers(header_block)
    fields = rewrite.header_fields(headers)
    origin = rewrite.origin(headers, mail_from)
    # Looked up again: the address may have been disabled or deleted since RCPT. The
    # reverse alias for replies comes with it when it was made before.
    found = await _find(ctx, mailbox, _replier(origin.reply_to))
    ip = peer_ip(session)
    helo = getattr(session, "host_name", None)
    # A disabled address blocks whatever the verdict: do not ask rspamd in vain.
    spam = found.address.enabled and await ctx.judge.is_spam(
        peer_ip=ip,
        fields=fields,
        message=raw,
        helo=helo,
        mail_from=mail_from,
        recipient=str(mailbox),
    )
    facts = Facts(
        owner_mailbox=found.owner_mailbox,
        spam=spam,
        looped=rewrite.has_loop_marker(fields, ctx.domain),
        owner_is_relay=owner_is_relay(ctx, found.owner_mailbox),
    )
    verdict = decide(found.address, facts)
    log.info("message for address %d: %s", found.address.id, verdict.action)
    if verdict.action is Action.REFUSE:
        raise verdict.refusal(verdict.reason)
    if verdict.action is Action.FORWARD:
        reverse_alias = found.reverse_alias or await _reverse_alias(
            ctx, found.address.id, origin.reply_to
        )
        message = rewrite.rewrite(
            raw,
            fields,
            origin,
            rewrite.Forward(
                relay_address=str(mailbox),
                reverse_alias=reverse_alias,
                received=rewrite.received_header(
                    helo=helo,
                    peer_ip=ip,
                    hostname=ctx.hostname,
                    relay_address=str(mailbox),
                    when=ctx.clock(),
                ),
                loop_marker=ctx.domain,
                spam=verdict.spam,
                keep_verdicts=ctx.judge.trusts(ip),
            ),
        )
        if ctx.signer is not None:
            message = await ctx.signer.sign(message)
        await _send(ctx, message, verdict, found.address.id)
    await count(ctx, found.address.id, verdict, sent=verdict.action is Action.FORWARD)


def _replier(reply_to: str) -> str | None:
    """Whom replies go to; None when there is nobody to answer (a bounce with no From),
    so that no reverse alias stands for an empty sender."""
    return reply_to if "@" in reply_to else None


async def _reverse_alias(ctx: MailContext, address_id: int, reply_to: str) -> str | None:
    """The reverse alias replies should go to, made now if this is the sender's first."""
    sender = _replier(reply_to)
    if sender is None:
        return None
    async with ctx.raw() as raw:
        return await mailflow.reverse_alias(raw, address_id, sender, domain=ctx.domain)


async def _send(ctx: MailContext, message: bytes, verdict: Verdict, address_id: int) -> None:
    assert verdict.target is not None
    sender = bounces.bounce_address(
        address_id, int(ctx.clock().timestamp()), ctx.bounce_secret, ctx.domain
    )
    try:
        await ctx.outbound.deliver(message, sender=sender, recipient=verdict.target)
    except (DeliveryDeferred, DeliveryRefused) as exc:
        log.info("forward for address %d not delivered: %s", address_id, exc.message)
        raise
