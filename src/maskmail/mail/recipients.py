"""The one recipient rule: who may be sent mail here, and by whom.

The SMTP handler asks it at RCPT, and the Postfix policy service (``mail/policy.py``)
asks it for Postfix while the sender is still connected, so both answer alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from maskmail.core import envelope
from maskmail.core.envelope import Kind, Located
from maskmail.core.errors import MaskmailError, RelayDenied
from maskmail.mail import bouncing, custom_domains, forwarding, replying
from maskmail.mail.context import MailContext


@dataclass(frozen=True, slots=True)
class Accepted:
    """A recipient accepted at RCPT, as the handler keeps it on the envelope for DATA."""

    located: Located
    # A relay address as read at RCPT, with its owner and mailboxes: DATA checks it
    # again in the transaction it runs before delivery instead of looking it up anew.
    # None for the other kinds, and for the address a first mail makes at DATA.
    found: forwarding.Found | None = None


def serves(ctx: MailContext, address: str) -> bool:
    """True when ``address`` is well formed and at a domain maskmail receives for."""
    try:
        return envelope.locate(address, ctx.domains).place is not None
    except MaskmailError:
        return False


async def receives(ctx: MailContext, address: str) -> bool:
    """``serves``, or at a user's verified custom domain."""
    try:
        located = envelope.locate(address, ctx.domains)
    except MaskmailError:
        return False
    if located.place is not None:
        return True
    return await custom_domains.holder(ctx, located.mailbox.domain) is not None


async def check_may_receive(ctx: MailContext, address: str, mail_from: str) -> Accepted:
    """The recipient, when mail from ``mail_from`` ("" for a bounce) may be sent to it.

    Otherwise a MaskmailError, whose SMTP line ``smtp_replies.reply_for`` gives: a foreign
    domain, an unknown address, a forged bounce address, a stranger writing to a
    reverse alias.
    """
    located = envelope.locate(address, ctx.domains)
    mailbox = located.mailbox
    if located.place is None and not await custom_domains.holder(ctx, mailbox.domain):
        # A foreign domain, or a custom domain not verified (yet).
        raise RelayDenied("relaying denied")
    if located.kind is Kind.BOUNCE:
        await bouncing.bounce_recipient(ctx, mailbox)
    elif located.kind is Kind.REVERSE_ALIAS:
        await replying.check_may_reply(ctx, mailbox, mail_from)
    else:
        return Accepted(located, await forwarding.check_may_forward(ctx, located, mail_from))
    return Accepted(located)
