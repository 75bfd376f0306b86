"""Mail to a relay address: looked up, judged, forwarded to the owner, and counted."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from maskmail.core import bounce_addresses, envelope
from maskmail.core.envelope import Mailbox
from maskmail.core.errors import (
    AddressNotFound,
    DeliveryDeferred,
    DeliveryRefused,
    MaskmailError,
    RelayDenied,
)
from maskmail.core.mailboxes import targets
from maskmail.core.verdict import Action, Facts, decide
from maskmail.mail import custom_domains, encryption, first_mail, rewrite
from maskmail.mail.context import MailContext, envelope_sender, peer_ip
from maskmail.mail.counting import count
from maskmail.mail.dkim import Signer
from maskmail.store import mailflow

log = logging.getLogger(__name__)


def owner_is_relay(ctx: MailContext, owner_mailbox: str) -> bool:
    try:
        return envelope.is_ours(envelope.parse_mailbox(owner_mailbox), ctx.domains)
    except MaskmailError:
        return False


async def _find(
    ctx: MailContext, mailbox: Mailbox, sender: str | None = None
) -> mailflow.Recipient:
    # Not at a relay domain: at a custom domain, which the recipient check let through.
    domain, subdomain = envelope.placed(mailbox, ctx.domains) or (mailbox.domain, None)
    async with ctx.drivers() as driver:
        found = await mailflow.find_recipient(
            driver, mailbox.local, domain, subdomain=subdomain, sender=sender
        )
    if found is None:
        raise AddressNotFound("no such address")
    return found


async def check_may_forward(ctx: MailContext, mailbox: Mailbox, mail_from: str) -> None:
    """At RCPT: refuse what is already known to be refused; an unknown local part at a
    catch-all is accepted when an address would be made for it (``first_mail.check``),
    but made only once its message is in (``forward``)."""
    try:
        owner_mailbox = (await _find(ctx, mailbox)).owner_mailbox
    except AddressNotFound:
        try:
            owner_mailbox = await first_mail.check(ctx, mailbox, mail_from)
        except AddressNotFound:
            # A concurrent first mail may have made it between the two look-ups: its
            # tombstone reads as "used before" while the address now exists.
            owner_mailbox = (await _find(ctx, mailbox)).owner_mailbox
    if owner_is_relay(ctx, owner_mailbox):
        raise RelayDenied("forwarding would loop")


@dataclass(frozen=True, slots=True)
class _Message:
    """One message's parts, read once: the raw bytes, the body, the headers in order, and
    who it is from."""

    raw: bytes
    body: bytes
    fields: rewrite.Fields
    origin: rewrite.Origin


async def forward(ctx: MailContext, session: Any, env: Any, mailbox: Mailbox) -> None:
    """Deliver, block or drop one message; return once it is done and counted.

    An address made on first mail for this message is unmade when the message is not
    accepted after all (refused, deferred, or the client gone), so RCPT alone, or a
    message that fails, leaves no address behind."""
    mail_from = envelope_sender(env)
    raw: bytes = env.original_content
    header_block, body = rewrite.split_message(raw)
    headers = rewrite.parse_headers(header_block)
    fields, origin = rewrite.header_fields(headers), rewrite.origin(headers, mail_from)
    message = _Message(raw, body, fields, origin)
    replier = _replier(message.origin.reply_to)
    # Looked up again: the address may have been disabled or deleted since RCPT. The
    # reverse alias for replies comes with it when it was made before.
    made = None
    try:
        found = await _find(ctx, mailbox, replier)
    except AddressNotFound:
        made = await first_mail.make(ctx, mailbox, mail_from)
        found = await _find(ctx, mailbox, replier)
    try:
        await _forward(ctx, session, mail_from, mailbox, found, message)
    except BaseException:
        if made is not None:
            # Shielded: when the client hung up this task is being cancelled, and the
            # address must go all the same.
            await asyncio.shield(first_mail.unmake(ctx, made))
        raise


async def _forward(
    ctx: MailContext,
    session: Any,
    mail_from: str,
    mailbox: Mailbox,
    found: mailflow.Recipient,
    parts: _Message,
) -> None:
    raw, body, fields, origin = parts.raw, parts.body, parts.fields, parts.origin
    sent_at = custom_domains.mail_domain(ctx, found.address)
    async with ctx.drivers() as driver:
        boxes = await mailflow.destinations(driver, found.address.user_id, found.address.id)
    owner_mailboxes = targets(boxes)
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
        owner_mailboxes=owner_mailboxes,
        spam=spam,
        looped=rewrite.has_loop_marker(fields, ctx.domain),
        owner_is_relay=any(owner_is_relay(ctx, m) for m in owner_mailboxes),
    )
    verdict = decide(found.address, facts)
    log.info("message for address %d: %s", found.address.id, verdict.action)
    if verdict.action is Action.REFUSE:
        raise verdict.refusal(verdict.reason)
    if verdict.action is Action.FORWARD:
        reverse_alias = found.reverse_alias or await _reverse_alias(
            ctx, found.address.id, origin.reply_to, sent_at
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
        # Encrypted (where a mailbox has a key) before signing: the signature covers
        # what is sent.
        copies = await encryption.copies(ctx, message, fields, body, boxes, verdict.targets)
        signer = await custom_domains.signer_for(ctx, sent_at)
        if signer is not None:
            copies = await _signed(signer, copies)
        mailbox_ids = {box.email: box.id for box in boxes}
        await _send(ctx, copies, found.address.id, mailbox_ids, sent_at)
    await count(ctx, found.address.id, verdict, sent=verdict.action is Action.FORWARD)


async def _signed(signer: Signer, copies: dict[str, bytes]) -> dict[str, bytes]:
    """Each distinct message signed once (copies without a key are the same bytes)."""
    done: dict[bytes, bytes] = {}
    for message in copies.values():
        if message not in done:
            done[message] = await signer.sign(message)
    return {target: done[message] for target, message in copies.items()}


def _replier(reply_to: str) -> str | None:
    """Whom replies go to; None when there is nobody to answer (a bounce with no From),
    so that no reverse alias stands for an empty sender."""
    return reply_to if "@" in reply_to else None


async def _reverse_alias(
    ctx: MailContext, address_id: int, reply_to: str, domain: str
) -> str | None:
    """The reverse alias replies should go to, made now if this is the sender's first."""
    sender = _replier(reply_to)
    if sender is None:
        return None
    async with ctx.drivers() as driver:
        return await mailflow.reverse_alias(driver, address_id, sender, domain=domain)


async def _send(
    ctx: MailContext,
    copies: dict[str, bytes],
    address_id: int,
    mailbox_ids: dict[str, int],
    domain: str,
) -> None:
    """One copy to each mailbox. Once any copy is delivered the message is done (a retry
    would send the delivered ones twice); only when none is does the sender hear of it,
    a deferral before a refusal, so that a retry can still reach them.

    With several mailboxes each copy's bounce address names its mailbox, so a refusal
    counts against that mailbox alone; with one, it counts against the address."""
    now = int(ctx.clock().timestamp())
    several = len(copies) > 1
    failures: list[DeliveryDeferred | DeliveryRefused] = []
    for target, message in copies.items():
        mailbox_id = mailbox_ids.get(target) if several else None
        sender = bounce_addresses.bounce_address(
            address_id, now, ctx.bounce_secret, domain, mailbox_id
        )
        try:
            await ctx.outbound.deliver(message, sender=sender, recipient=target)
        except (DeliveryDeferred, DeliveryRefused) as exc:
            log.info("forward for address %d not delivered: %s", address_id, exc.message)
            failures.append(exc)
    if len(failures) == len(copies):
        raise next((f for f in failures if isinstance(f, DeliveryDeferred)), failures[0])
