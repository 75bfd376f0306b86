"""The one recipient rule: who may be sent mail here, and by whom.

The SMTP handler asks it at RCPT, and the Postfix policy service (``mail/policy.py``)
asks it for Postfix while the sender is still connected, so both answer alike.
"""

from __future__ import annotations

from maskmail.core import envelope, reverse
from maskmail.core.envelope import Mailbox
from maskmail.core.errors import MaskmailError, RelayDenied
from maskmail.mail import bouncing, custom_domains, forwarding, replying
from maskmail.mail.context import MailContext


def serves(ctx: MailContext, address: str) -> bool:
    """True when ``address`` is well formed and at a domain maskmail receives for."""
    try:
        return envelope.is_ours(envelope.parse_mailbox(address), ctx.domains)
    except MaskmailError:
        return False


async def receives(ctx: MailContext, address: str) -> bool:
    """``serves``, or at a user's verified custom domain."""
    if serves(ctx, address):
        return True
    try:
        mailbox = envelope.parse_mailbox(address)
    except MaskmailError:
        return False
    return await custom_domains.holder(ctx, mailbox.domain) is not None


async def check_may_receive(ctx: MailContext, address: str, mail_from: str) -> Mailbox:
    """The recipient, when mail from ``mail_from`` ("" for a bounce) may be sent to it.

    Otherwise a MaskmailError, whose SMTP line ``smtp_replies.reply_for`` gives: a foreign
    domain, an unknown address, a forged bounce address, a stranger writing to a
    reverse alias.
    """
    mailbox = envelope.parse_mailbox(address)
    if not envelope.is_ours(mailbox, ctx.domains) and not await custom_domains.holder(
        ctx, mailbox.domain
    ):
        # A foreign domain, or a custom domain not verified (yet).
        raise RelayDenied("relaying denied")
    if bouncing.is_bounce(mailbox):
        await bouncing.bounce_recipient(ctx, mailbox)
    elif reverse.is_alias_local(mailbox.local):
        await replying.check_may_reply(ctx, mailbox, mail_from)
    else:
        await forwarding.check_may_forward(ctx, mailbox, mail_from)
    return mailbox
