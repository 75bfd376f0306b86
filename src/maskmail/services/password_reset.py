"""Password reset by mail: the link a forgotten password asks for, and setting a new
password by it (docs/dashboard.md, "Forgotten password").

The link carries a random token; only its SHA-256 is kept, for ``LIFETIME`` seconds on
this server's clock. Using it burns it (and every other link of the account) in the
transaction that sets the password and signs out every session of the user, so a link
works once, and of two uses at the same time exactly one does. Whether an account
exists is never told: asking is answered before any of this runs (``mail_link`` runs
after the answer, services/account_mail.py).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from maskmail.config import Settings
from maskmail.core.errors import MaskmailError
from maskmail.core.mailboxes import notice
from maskmail.services import account_mail, accounts
from maskmail.services.sending import Sender
from maskmail.store import password_resets
from maskmail.store.engine import transaction

# A link works for an hour.
LIFETIME = 3600
# Live links one account may have at once: asking again and again mails no more.
LIVE_LINKS = 3


class LinkUnusable(MaskmailError):
    """A reset link that is unknown, used already or expired."""


class PasswordsDiffer(MaskmailError):
    """The new password typed twice, two ways."""


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("ascii", "replace")).hexdigest()


def reset_message(*, to: str, sender: str, link: str, when: float) -> bytes:
    """The message that carries a reset link (plain text)."""
    return notice(
        to=to,
        sender=sender,
        subject="Reset your maskmail password",
        when=when,
        text="Someone (we hope you) asked to reset the password of your maskmail account.\n\n"
        f"Choose a new password by opening this link within an hour:\n\n{link}\n\n"
        "The link works once. Setting a new password signs out every session of the "
        "account.\nIf you did not ask for this, ignore this message; your password "
        "stays as it is.\n",
    )


async def prepare_link(
    conn: AsyncConnection, settings: Settings, email: str, link_for: Callable[[str], str]
) -> tuple[bytes, str] | None:
    """Keep a new link for the account of ``email``; the message and the mailbox it goes
    to, or None when nothing is to be sent (no such account, a disabled one, no verified
    default mailbox, or ``LIVE_LINKS`` live links already)."""
    user_id = await password_resets.user_for_reset(conn, email)
    if user_id is None:
        return None
    mailbox = await account_mail.default_mailbox(conn, user_id)
    if mailbox is None:
        return None
    token = secrets.token_urlsafe(32)
    if not await password_resets.add(
        conn, user_id, digest(token), lifetime=LIFETIME, most=LIVE_LINKS
    ):
        return None
    message = reset_message(
        to=mailbox, sender=f"accounts@{settings.domain}", link=link_for(token), when=time.time()
    )
    return message, mailbox


async def mail_link(
    engine: AsyncEngine,
    settings: Settings,
    sender: Sender,
    email: str,
    link_for: Callable[[str], str],
) -> None:
    """Make and mail a link for ``email``'s account, if there is one: in a transaction of
    its own, committed before the message leaves, so the link works when it arrives."""
    async with transaction(engine) as conn:
        outgoing = await prepare_link(conn, settings, email, link_for)
    if outgoing is not None:
        await account_mail.deliver(sender, *outgoing)


async def link_is_live(conn: AsyncConnection, token: str) -> bool:
    """Whether the link's page may show its form (opening it uses nothing, so a mail
    scanner that follows links burns no link)."""
    return await password_resets.user_of(conn, digest(token)) is not None


async def reset_password(conn: AsyncConnection, token: str, new: str, again: str) -> int:
    """Set the password by a link; the user's id. Every session of the user ends and the
    link, with every other of theirs, is burnt. Raises ``PasswordsDiffer``,
    ``passwords.WeakPassword`` (the rules of every password) or ``LinkUnusable``, and
    then changes nothing."""
    # A dead link costs no password hash.
    if not await link_is_live(conn, token):
        raise LinkUnusable("this link is used, expired or unknown; ask for a new one")
    if new != again:
        raise PasswordsDiffer("the two new passwords differ")
    hashed = await accounts.hash_new(new)
    user_id = await password_resets.use(conn, digest(token))
    if user_id is None:  # used by someone else while the password was hashed
        raise LinkUnusable("this link is used, expired or unknown; ask for a new one")
    await accounts.store_hashed(conn, user_id, hashed)
    return user_id
