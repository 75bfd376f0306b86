"""The aiosmtpd handler: each hook looks up (store), decides (core), acts, and replies."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.core import bounces, envelope
from maskmail.core.errors import (
    AddressNotFound,
    DeliveryDeferred,
    DeliveryRefused,
    MaskmailError,
    RelayDenied,
)
from maskmail.core.verdict import Action, Facts, Verdict, decide
from maskmail.mail import bouncing, replies, rewrite
from maskmail.mail.dkim import Signer
from maskmail.mail.outbound import Outbound
from maskmail.mail.spam import SpamJudge
from maskmail.store import mailflow
from maskmail.store.engine import transaction
from maskmail.store.reverse_aliases import reverse_alias_for

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class MailContext:
    """What the handler needs, built once at start-up."""

    engine: AsyncEngine
    domain: str
    hostname: str
    outbound: Outbound
    judge: SpamJudge
    bounce_secret: bytes
    signer: Signer | None = None
    bounce_pause_threshold: int = 5
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)


def _peer_ip(session: Any) -> str | None:
    peer = getattr(session, "peer", None)
    return str(peer[0]) if isinstance(peer, tuple) and peer else None


class RelayHandler:
    """One instance serves every connection; all state lives in the envelope."""

    def __init__(self, context: MailContext) -> None:
        self.ctx = context

    async def handle_MAIL(  # noqa: N802 (aiosmtpd's hook names)
        self, server: Any, session: Any, env: Any, address: str, mail_options: list[str]
    ) -> str:
        try:
            envelope.check_sender(address)
        except MaskmailError:
            return replies.BAD_SENDER
        env.mail_from = address
        env.mail_options.extend(mail_options)
        return replies.SENDER_OK

    async def handle_RCPT(  # noqa: N802
        self, server: Any, session: Any, env: Any, address: str, rcpt_options: list[str]
    ) -> str:
        """Answer every recipient truly, here, whenever the answer is already known."""
        try:
            mailbox = envelope.parse_mailbox(address)
            if not envelope.is_ours(mailbox, self.ctx.domain):
                raise RelayDenied("relaying denied")
            if bouncing.is_bounce(mailbox):
                await bouncing.bounce_recipient(self.ctx, mailbox)
            else:
                await self._check_recipient(mailbox)
        except MaskmailError as exc:
            return replies.reply_for(exc)
        if env.rcpt_tos:
            return replies.ONE_RECIPIENT
        env.rcpt_tos.append(str(mailbox))
        env.rcpt_options.extend(rcpt_options)
        return replies.RECIPIENT_OK

    async def _check_recipient(self, mailbox: envelope.Mailbox) -> None:
        async with transaction(self.ctx.engine, readonly=True) as conn:
            found = await mailflow.find_recipient(conn, mailbox.local, mailbox.domain)
        if found is None:
            raise AddressNotFound("no such address")
        if self._owner_is_relay(found.owner_mailbox):
            raise RelayDenied("forwarding would loop")

    def _owner_is_relay(self, owner_mailbox: str) -> bool:
        try:
            return envelope.is_ours(envelope.parse_mailbox(owner_mailbox), self.ctx.domain)
        except MaskmailError:
            return False

    async def handle_DATA(self, server: Any, session: Any, env: Any) -> str:  # noqa: N802
        try:
            mailbox = envelope.parse_mailbox(env.rcpt_tos[0])
            if bouncing.is_bounce(mailbox):
                return await bouncing.take_bounce(self.ctx, mailbox, env.original_content)
            return await self._deliver(session, env)
        except MaskmailError as exc:
            return replies.reply_for(exc)

    async def _deliver(self, session: Any, env: Any) -> str:
        mailbox = envelope.parse_mailbox(env.rcpt_tos[0])
        # aiosmtpd keeps the null sender of a bounce as "<>" (it must stay truthy for it).
        mail_from = "" if env.mail_from in (None, "<>") else str(env.mail_from)
        raw: bytes = env.original_content
        # Looked up again: the address may have been disabled or deleted since RCPT.
        async with transaction(self.ctx.engine, readonly=True) as conn:
            found = await mailflow.find_recipient(conn, mailbox.local, mailbox.domain)
        if found is None:
            raise AddressNotFound("no such address")
        header_block, _ = rewrite.split_message(raw)
        headers = rewrite.parse_headers(header_block)
        fields = rewrite.header_fields(headers)
        peer_ip = _peer_ip(session)
        helo = getattr(session, "host_name", None)
        # A disabled address blocks whatever the verdict: do not ask rspamd in vain.
        spam = found.address.enabled and await self.ctx.judge.is_spam(
            peer_ip=peer_ip,
            fields=fields,
            message=raw,
            helo=helo,
            mail_from=mail_from,
            recipient=str(mailbox),
        )
        facts = Facts(
            owner_mailbox=found.owner_mailbox,
            spam=spam,
            looped=rewrite.has_loop_marker(fields, self.ctx.domain),
            owner_is_relay=self._owner_is_relay(found.owner_mailbox),
        )
        verdict = decide(found.address, facts)
        log.info("message for address %d: %s", found.address.id, verdict.action)
        if verdict.action is Action.REFUSE:
            raise RelayDenied(verdict.reason)
        if verdict.action is Action.FORWARD:
            origin = rewrite.origin(headers, mail_from)
            reverse_alias = await self._reverse_alias(found.address.id, origin.reply_to)
            forward = rewrite.Forward(
                relay_address=str(mailbox),
                reverse_alias=reverse_alias,
                received=rewrite.received_header(
                    helo=helo,
                    peer_ip=peer_ip,
                    hostname=self.ctx.hostname,
                    relay_address=str(mailbox),
                    when=self.ctx.clock(),
                ),
                loop_marker=self.ctx.domain,
                spam=verdict.spam,
                keep_verdicts=self.ctx.judge.trusts(peer_ip),
            )
            message = rewrite.rewrite(raw, fields, origin, forward)
            if self.ctx.signer is not None:
                message = await self.ctx.signer.sign(message)
            await self._send(message, verdict, found.address.id)
        await self._count(found.address.id, verdict)
        return replies.ACCEPTED

    async def _reverse_alias(self, address_id: int, reply_to: str) -> str | None:
        """The reverse alias replies should go to; None when there is nobody to answer
        (a bounce with no From), so that no alias stands for an empty sender."""
        if "@" not in reply_to:
            return None
        async with transaction(self.ctx.engine) as conn:
            alias = await reverse_alias_for(conn, address_id, reply_to, domain=self.ctx.domain)
        return alias.full_address

    async def _send(self, message: bytes, verdict: Verdict, address_id: int) -> None:
        assert verdict.target is not None
        sender = bounces.bounce_address(
            address_id, int(self.ctx.clock().timestamp()), self.ctx.bounce_secret, self.ctx.domain
        )
        try:
            await self.ctx.outbound.deliver(message, sender=sender, recipient=verdict.target)
        except (DeliveryDeferred, DeliveryRefused) as exc:
            log.info("forward for address %d not delivered: %s", address_id, exc.message)
            raise

    async def _count(self, address_id: int, verdict: Verdict) -> None:
        """Count what was done. After a delivery, a counting failure must not make the
        client retry (the owner would get the message twice), so it is logged instead."""
        if not verdict.counters:
            return
        try:
            async with transaction(self.ctx.engine) as conn:
                await mailflow.count_all(conn, address_id, verdict.counters)
        except MaskmailError:
            if verdict.action is not Action.FORWARD:
                raise
            log.error("delivered, but could not count it for address %d", address_id)

    async def handle_exception(self, error: Exception) -> str:
        """Anything unexpected: logged here, never shown; the client retries later."""
        log.error("unexpected error in the SMTP session", exc_info=error)
        return replies.TRY_LATER
