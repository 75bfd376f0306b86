"""Mail to a relay address: looked up, judged, forwarded to the owner, and counted.

At RCPT ``check_may_forward`` reads the address with its owner and mailboxes in one
script (``mailflow.find_recipient``), and the handler keeps what it found on the
envelope. At DATA ``forward`` reads the message once, asks the spam check, and runs one
script before delivery (``mailflow.recheck``): the address again, which may have been
disabled or deleted since RCPT, with the sender's reverse alias, made if the message is
to be forwarded. Then it decides, rewrites, delivers, and counts in one script more.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from maskmail.core import bounce_addresses, envelope, mailboxes
from maskmail.core.envelope import Located
from maskmail.core.errors import (
    AddressNotFound,
    AddressTaken,
    DeliveryDeferred,
    DeliveryRefused,
    RelayDenied,
)
from maskmail.core.verdict import Action, Facts, decide
from maskmail.mail import custom_domains, encryption, first_mail, rewrite
from maskmail.mail.context import MailContext, envelope_sender, peer_ip
from maskmail.mail.counting import count
from maskmail.mail.dkim import Signer
from maskmail.mail.spam import SpamCheck
from maskmail.store import mailflow
from maskmail.store.driver import ONE_WRITE, READ
from maskmail.store.reverse_aliases import MAX_ROUNDS

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Found:
    """A relay address as RCPT found it, and what its forward needs besides, worked out
    once."""

    recipient: mailflow.Recipient
    # The mailboxes that take its mail (``core.mailboxes.targets``).
    targets: tuple[str, ...]
    # The owner's own mailbox, or one of the targets, is at the relay's domains: a
    # forward would come back.
    owner_is_relay: bool
    target_is_relay: bool
    # The domain mail from the address is sent at (``custom_domains.mail_domain``).
    sent_at: str


def _found(ctx: MailContext, recipient: mailflow.Recipient) -> Found:
    targets = mailboxes.targets(recipient.destinations)
    at_relay = envelope.ours_among((recipient.owner_mailbox, *targets), ctx.domains)
    return Found(
        recipient,
        targets,
        owner_is_relay=recipient.owner_mailbox in at_relay,
        target_is_relay=any(target in at_relay for target in targets),
        sent_at=custom_domains.mail_domain(ctx, recipient.address),
    )


async def _find(ctx: MailContext, located: Located) -> Found | None:
    # Not at a relay domain: at a custom domain, which the recipient check let through.
    domain, subdomain = located.place or (located.mailbox.domain, None)
    script = mailflow.find_recipient(located.mailbox.local, domain, subdomain=subdomain)
    recipient = await ctx.drivers.run(script, READ)
    return None if recipient is None else _found(ctx, recipient)


async def check_may_forward(ctx: MailContext, located: Located, mail_from: str) -> Found | None:
    """At RCPT: the address as found, for DATA; refuse what is already known to be
    refused. An unknown local part at a catch-all is accepted (None) when an address
    would be made for it (``first_mail.check``), but made only once its message is in
    (``forward``)."""
    found = await _find(ctx, located)
    if found is not None:
        if found.owner_is_relay:
            raise RelayDenied("forwarding would loop")
        return found
    try:
        owner_mailbox = await first_mail.check(ctx, located.mailbox, mail_from)
    except AddressNotFound:
        # A concurrent first mail may have made it between the two look-ups: its
        # tombstone reads as "used before" while the address now exists.
        found = await _find(ctx, located)
        if found is None:
            raise
        if found.owner_is_relay:
            raise RelayDenied("forwarding would loop") from None
        return found
    if envelope.ours_among((owner_mailbox,), ctx.domains):
        raise RelayDenied("forwarding would loop")
    return None


async def forward(
    ctx: MailContext, session: Any, env: Any, located: Located, found: Found | None
) -> None:
    """Deliver, block or drop one message; return once it is done and counted.

    ``found`` is the address as RCPT found it; None when the message's catch-all makes
    it here. An address made on first mail for this message is unmade when the message
    is not accepted after all (refused, deferred, or the client gone), so RCPT alone, or
    a message that fails, leaves no address behind."""
    mail_from = envelope_sender(env)
    message = rewrite.read(env.original_content, mail_from, ctx.domain)
    if found is not None:
        await _forward(ctx, session, mail_from, located, found, message)
        return
    made = await first_mail.make(ctx, located.mailbox, mail_from)
    try:
        # None from make: a concurrent message made it first.
        found = await _find(ctx, located)
        if found is None:
            raise AddressNotFound("no such address")
        await _forward(ctx, session, mail_from, located, found, message)
    except BaseException:
        if made is not None:
            # Shielded: when the client hung up this task is being cancelled, and the
            # address must go all the same.
            await asyncio.shield(first_mail.unmake(ctx, made))
        raise


async def _recheck(
    ctx: MailContext, address_id: int, sender: str | None, domain: str
) -> mailflow.Checked:
    """``mailflow.recheck``, run again while a reverse alias that is wanted could not be
    made in its round (a concurrent one for the pair, or a taken alias)."""
    mode = READ if sender is None else ONE_WRITE
    for _ in range(MAX_ROUNDS):
        script = mailflow.recheck(ctx.drivers.dialect, address_id, sender, domain=domain)
        checked = await ctx.drivers.run(script, mode)
        address = checked.address
        if sender is None or address is None or not address.enabled or checked.reverse_alias:
            return checked
    raise AddressTaken("could not make a reverse alias; try again")


async def _forward(
    ctx: MailContext,
    session: Any,
    mail_from: str,
    located: Located,
    found: Found,
    message: rewrite.Incoming,
) -> None:
    ip, helo, when = peer_ip(session), getattr(session, "host_name", None), ctx.clock()

    async def spam_check() -> SpamCheck:
        return await ctx.judge.check(
            peer_ip=ip,
            fields=message.fields,
            message=message.raw,
            helo=helo,
            mail_from=mail_from,
            recipient=located.address,
        )

    def facts(checked: SpamCheck | None) -> Facts:
        return Facts(
            owner_mailboxes=found.targets,
            spam=checked is not None and checked.spam,
            looped=message.looped,
            owner_is_relay=found.target_is_relay,
        )

    # A disabled address blocks whatever the verdict: do not ask rspamd in vain.
    rcpt_address = found.recipient.address
    spam = await spam_check() if rcpt_address.enabled else None
    replier = _replier(message.origin.reply_to)
    # Decided first on the address as RCPT found it, to know whether a reverse alias is
    # wanted; then on the address as it is now, read with the alias in one script.
    known = facts(spam)
    wanted = decide(rcpt_address, known).action is Action.FORWARD
    checked = await _recheck(ctx, rcpt_address.id, replier if wanted else None, found.sent_at)
    address = checked.address
    if address is None:
        raise AddressNotFound("no such address")
    if spam is None and address.enabled:
        spam = await spam_check()  # enabled since RCPT
        known = facts(spam)
    verdict = decide(address, known)
    log.info("message for address %d: %s", address.id, verdict.action)
    if verdict.action is Action.REFUSE:
        raise verdict.refusal(verdict.reason)
    if verdict.action is Action.FORWARD:
        reverse_alias = checked.reverse_alias
        if reverse_alias is None and replier is not None and not wanted:
            # Enabled since RCPT: the alias was not asked for with the address.
            reverse_alias = (await _recheck(ctx, address.id, replier, found.sent_at)).reverse_alias
        forwarded = rewrite.rewrite(
            message,
            rewrite.Forward(
                relay_address=located.address,
                reverse_alias=reverse_alias,
                helo=helo,
                peer_ip=ip,
                hostname=ctx.hostname,
                when=when,
                loop_marker=ctx.domain,
                spam=verdict.spam,
                keep_verdicts=spam is not None and spam.trusted,
            ),
        )
        boxes = found.recipient.destinations
        # Encrypted (where a mailbox has a key) before signing: the signature covers
        # what is sent.
        copies = await encryption.copies(
            ctx, forwarded, message.fields, message.body, boxes, verdict.targets
        )
        signer = await custom_domains.signer_for(ctx, found.sent_at)
        if signer is not None:
            copies = await _signed(signer, copies)
        mailbox_ids = {box.email: box.id for box in boxes}
        await _send(ctx, copies, address.id, mailbox_ids, found.sent_at, when)
    await count(ctx, address.id, verdict, sent=verdict.action is Action.FORWARD)


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


async def _send(
    ctx: MailContext,
    copies: dict[str, bytes],
    address_id: int,
    mailbox_ids: dict[str, int],
    domain: str,
    when: datetime,
) -> None:
    """One copy to each mailbox. Once any copy is delivered the message is done (a retry
    would send the delivered ones twice); only when none is does the sender hear of it,
    a deferral before a refusal, so that a retry can still reach them.

    With several mailboxes each copy's bounce address names its mailbox, so a refusal
    counts against that mailbox alone; with one, it counts against the address."""
    now = int(when.timestamp())
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
