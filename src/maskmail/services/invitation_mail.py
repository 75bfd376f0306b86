"""An invitation mailed to the person it is for (``maskmail invite create --email``, the
admin page's "Send it to"): the address checked by the rule sign-up uses, then the
invitation made and its link sent through the outbound path of the other account mail
(``Sender``: smarthost or Maildir outbox, DKIM-signed when a key is set), one plain-text
part from ``accounts@MASKMAIL_DOMAIN``.

The message is sent inside the caller's transaction, as the last step: a malformed
address, one at the relay's domains, a server without an outbound path or a message the
smarthost refuses raises before the transaction commits, so no invitation is left that
nobody was told of. The address is never logged nor stored (the invitation keeps only
its token's digest).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.config import Settings
from maskmail.core.errors import DeliveryDeferred
from maskmail.core.mailboxes import notice
from maskmail.services import account_mail, invitations, signup
from maskmail.services.invitations import NewInvitation
from maskmail.services.sending import Sender


@dataclass(frozen=True, slots=True)
class Mailing:
    """Where and how to mail a new invitation: the address as typed, the server's
    settings, its outbound path (None: it sends no mail), and the dashboard's URL the
    link starts with."""

    email: str
    settings: Settings
    sender: Sender | None
    base_url: str


def invitation_message(*, to: str, sender: str, link: str, expires: int, when: float) -> bytes:
    """The message that carries an invitation's link (plain text)."""
    until = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(expires))
    return notice(
        to=to,
        sender=sender,
        subject="You are invited to maskmail",
        when=when,
        text="You are invited to make an account on this maskmail server, a relay that "
        "gives you addresses to hand out instead of your own.\n\n"
        f"Sign up by opening this link before {until}:\n\n{link}\n\n"
        "The link works once. If you did not expect this, ignore this message; nothing "
        "is made unless you sign up.\n",
    )


@dataclass(frozen=True, slots=True)
class Checked:
    """A mailing ``check`` let through: the normalised address and the outbound path."""

    mailing: Mailing
    mailbox: str
    sender: Sender


async def check(conn: AsyncConnection, mailing: Mailing) -> Checked:
    """The mailing, its address checked (InvalidAddress when it is malformed or at the
    relay's own or custom domains); DeliveryDeferred when the server sends no mail."""
    mailbox = await signup.check_email(conn, mailing.settings, mailing.email)
    if mailing.sender is None:
        raise DeliveryDeferred("this server has no outbound path for its mail")
    return Checked(mailing, mailbox, mailing.sender)


async def send(checked: Checked, made: NewInvitation) -> None:
    """Mail ``made``'s link to the checked address."""
    mailing, mailbox = checked.mailing, checked.mailbox
    message = invitation_message(
        to=mailbox,
        sender=f"accounts@{mailing.settings.domain}",
        link=made.link(mailing.base_url),
        expires=made.invitation.expires_time,
        when=time.time(),
    )
    await account_mail.deliver(checked.sender, message, mailbox)


async def create_and_mail(
    conn: AsyncConnection, mailing: Mailing, *, expires_in: int, created_by: int | None = None
) -> NewInvitation:
    """``invitations.create``, its link mailed to ``mailing.email``; refused before
    anything is made when the address is."""
    checked = await check(conn, mailing)
    made = await invitations.create(conn, expires_in=expires_in, created_by=created_by)
    await send(checked, made)
    return made
