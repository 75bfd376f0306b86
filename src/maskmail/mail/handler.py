"""The aiosmtpd handler: each recipient is answered by the path its address belongs to.

A relay address forwards (``forwarding``); a reverse alias carries the owner's reply
(``replying``); a signed bounce address takes delivery reports (``bouncing``). Each
path looks up (store), decides (core), acts, and counts.
"""

from __future__ import annotations

import logging
from typing import Any

from maskmail import logs, metrics
from maskmail.core import envelope
from maskmail.core.envelope import Kind
from maskmail.core.errors import InvalidAddress, MaskmailError
from maskmail.mail import bouncing, forwarding, recipients, replying, smtp_replies
from maskmail.mail.context import MailContext, envelope_sender

log = logging.getLogger(__name__)
# The envelope's attribute that keeps the recipient accepted at RCPT for DATA. aiosmtpd
# makes a new envelope for each message (MAIL, RSET), so it never outlives its message.
ACCEPTED = "maskmail_accepted"


class RelayHandler:
    """One instance serves every connection; all state lives in the envelope."""

    def __init__(self, context: MailContext) -> None:
        self.ctx = context

    async def handle_MAIL(  # noqa: N802 (aiosmtpd's hook names)
        self, server: Any, session: Any, env: Any, address: str, mail_options: list[str]
    ) -> str:
        # A new message: every line it causes from here on carries this id.
        logs.bind("message_id")
        try:
            envelope.check_sender(address)
        except MaskmailError:
            return smtp_replies.BAD_SENDER
        env.mail_from = address
        env.mail_options.extend(mail_options)
        return smtp_replies.SENDER_OK

    async def handle_RCPT(  # noqa: N802
        self, server: Any, session: Any, env: Any, address: str, rcpt_options: list[str]
    ) -> str:
        """Answer every recipient truly, here, whenever the answer is already known."""
        try:
            accepted = await recipients.check_may_receive(self.ctx, address, envelope_sender(env))
        except MaskmailError as exc:
            return smtp_replies.reply_for(exc)
        if env.rcpt_tos:
            return smtp_replies.ONE_RECIPIENT
        env.rcpt_tos.append(accepted.located.address)
        setattr(env, ACCEPTED, accepted)
        env.rcpt_options.extend(rcpt_options)
        return smtp_replies.RECIPIENT_OK

    async def handle_DATA(self, server: Any, session: Any, env: Any) -> str:  # noqa: N802
        try:
            accepted = _accepted(env)
            mailbox = accepted.located.mailbox
            if accepted.located.kind is Kind.BOUNCE:
                reply = await bouncing.take_bounce(self.ctx, mailbox, env.original_content)
                _count_outcome(reply, "bounced")
                return reply
            if accepted.located.kind is Kind.REVERSE_ALIAS:
                await replying.reply(self.ctx, session, env, mailbox)
            else:
                await forwarding.forward(self.ctx, session, env, accepted.located, accepted.found)
        except MaskmailError as exc:
            reply = smtp_replies.reply_for(exc)
            _count_outcome(reply, "")
            return reply
        return smtp_replies.ACCEPTED

    async def handle_exception(self, error: Exception) -> str:
        """Anything unexpected: logged here, never shown; the client retries later."""
        log.error("unexpected error in the SMTP session", exc_info=error)
        return smtp_replies.TRY_LATER


def _count_outcome(reply: str, accepted: str) -> None:
    """Messages not counted by their verdict (``counting.py``): by the reply they got."""
    if reply.startswith("2"):
        if accepted:
            metrics.mail_outcomes.labels(accepted).inc()
        return
    metrics.mail_outcomes.labels("refused" if reply.startswith("5") else "deferred").inc()


def _accepted(env: Any) -> recipients.Accepted:
    """The recipient RCPT accepted; aiosmtpd answers DATA without one itself."""
    accepted = getattr(env, ACCEPTED, None)
    if not env.rcpt_tos or not isinstance(accepted, recipients.Accepted):
        raise InvalidAddress("no recipient")
    return accepted
