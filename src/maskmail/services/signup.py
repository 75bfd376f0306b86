"""Signing up (``MASKMAIL_SIGNUP`` invite or open): the account, its first mailbox
verified by the mailboxes' own code-or-link flow, and nothing that tells who has an
account.

An account made here has no password on ``users`` until its first mailbox is verified
(``store/signups.py`` keeps it meanwhile), so it cannot sign in before. An address that
has an account already gets a message saying someone tried, and the person signing up
sees the same page as for a new account; a sign-up that waits for its mailbox is
replaced by a new one with the same address, so that nobody can hold an address they
cannot read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.config import Settings
from maskmail.core import signup as rules
from maskmail.core.addresses import normalize_mailbox
from maskmail.core.errors import (
    DeliveryDeferred,
    InvalidAddress,
    MailboxNotFound,
    RateLimited,
    UserExists,
    UserNotFound,
)
from maskmail.core.mailboxes import VERIFY_SECONDS, at_relay_domain, digest
from maskmail.services import invitations
from maskmail.services import mailboxes as mailbox_flow
from maskmail.services.accounts import hash_new
from maskmail.services.mailboxes import Limiter
from maskmail.services.relay_domains import is_relay_host, relay_domains
from maskmail.services.sending import Sender
from maskmail.store import accounts, custom_domains, mailboxes, signups
from maskmail.store.clock import now


@dataclass(frozen=True, slots=True)
class Links:
    """The door's links, as the person will open them: the verification link for a
    token, and the sign-in page."""

    verify: Callable[[str], str]
    sign_in: str


def mode(settings: Settings) -> rules.Mode:
    return rules.Mode(settings.signup)


def check_open(settings: Settings) -> rules.Mode:
    """The mode, or SignUpClosed when nobody may sign up."""
    current = mode(settings)
    if current is rules.Mode.CLOSED:
        raise rules.closed()
    return current


async def check_email(conn: AsyncConnection, settings: Settings, email: str) -> str:
    """The address to sign up with, checked: valid, and not at the relay's own domains
    nor at any user's custom domain (mail to it would come back to the relay)."""
    try:
        mailbox = normalize_mailbox(email)
    except InvalidAddress as exc:
        raise InvalidAddress(exc.message, {"field": "email"}) from exc
    host = mailbox.rpartition("@")[2]
    ours = await relay_domains(conn, settings.domain)
    theirs = {d.domain for d in await custom_domains.every_domain(conn)}
    if is_relay_host(host, ours | theirs):
        raise at_relay_domain()
    return mailbox


async def sign_up(
    conn: AsyncConnection,
    settings: Settings,
    *,
    email: str,
    password: str,
    invite: str,
    sender: Sender | None,
    links: Links,
) -> str:
    """Sign up, and return the ticket the page's code form carries.

    Refusals (closed, a bad password, a bad invitation, a bad address) come before
    anything is looked up by the address. The invitation is spent whether or not the address has
    an account, so that spending it tells nothing either; a refusal later rolls back
    with the caller's transaction and leaves the invitation unspent.
    """
    current = check_open(settings)
    # First, before any write: the hash takes a while, and a write would hold SQLite's
    # lock through it.
    password_hash = await hash_new(password)
    invitation = None
    if current is rules.Mode.INVITE:
        invitation = await invitations.redeem(conn, invite)
    email = await check_email(conn, settings, email)
    if sender is None:
        raise DeliveryDeferred("this server has no outbound path for its mail")
    ticket = rules.new_ticket()
    await _forget_abandoned(conn)
    try:
        user_id = await accounts.user_id_for_email(conn, email)
    except UserNotFound:
        user_id = None
    if user_id is not None:
        if await signups.by_email(conn, email) is None:
            message = rules.taken_notice(
                to=email, sender=_from(settings), sign_in=links.sign_in, when=time.time()
            )
            await sender.deliver(message, sender="", recipient=email)
            return ticket
        # A sign-up that still waits for its mailbox: the newer one replaces it.
        await accounts.delete_user_rows(conn, user_id)
    try:
        user_id = await accounts.add_user(conn, email, first_mailbox=False)
    except UserExists:
        # Another sign-up with the address got there first; its message is on its way.
        return ticket
    mailbox = await mailbox_flow.add_and_ask(
        conn, settings, user_id, email, sender=sender, link_for=links.verify
    )
    await signups.add(
        conn, user_id, mailbox.id, ticket_hash=digest(ticket), password_hash=password_hash
    )
    if invitation is not None:
        await invitations.record_account(conn, invitation.id, user_id)
    return ticket


# Abandoned sign-ups removed by each new one: more than one, so that they cannot pile up.
_FORGET_AT_ONCE = 5


async def _forget_abandoned(conn: AsyncConnection) -> None:
    """Remove accounts whose sign-up's code and link expired unused: they could never
    sign in, and ``maskmail user list`` would show them forever."""
    for user_id in await signups.expired(conn, now() - VERIFY_SECONDS, limit=_FORGET_AT_ONCE):
        await accounts.delete_user_rows(conn, user_id)


def _from(settings: Settings) -> str:
    return f"mailboxes@{settings.domain}"


async def confirm_code(conn: AsyncConnection, ticket: str, code: str, *, limiter: Limiter) -> str:
    """Verify the sign-up's mailbox by the mailed code, and finish the account; returns
    its address. A wrong code, an expired one and a ticket that names nothing get one
    answer, and each try counts."""
    pending = await signups.by_ticket(conn, digest(ticket)) if ticket else None
    try:
        if pending is None:
            await limiter.hit(f"signup-ticket:{digest(ticket)}")
            raise rules.wrong_code()
        checked = await mailbox_flow.check_code(
            conn, pending.user_id, pending.mailbox_id, code.strip(), limiter=limiter
        )
    except RateLimited as exc:
        raise rules.too_many_codes(exc.retry_after) from exc
    except InvalidAddress as exc:
        raise rules.wrong_code() from exc
    await finish(conn, pending.user_id, checked.id)
    return checked.email


async def confirm_link(conn: AsyncConnection, token: str) -> str:
    """Verify by the mailed link's token (MailboxNotFound when it is used, expired or
    unknown), and finish the account; returns its address."""
    try:
        checked = await mailbox_flow.verify_by_link(conn, token)
    except MailboxNotFound as exc:
        raise MailboxNotFound("this link was used already or has expired") from exc
    pending = await signups.by_mailbox(conn, checked.id)
    if pending is not None:
        await finish(conn, pending.user_id, checked.id)
    return checked.email


async def finish(conn: AsyncConnection, user_id: int, mailbox_id: int) -> None:
    """The verified mailbox becomes the default, and the password the account's: from
    now on it signs in like any other."""
    password_hash = await signups.finish(conn, user_id)
    if password_hash is None:
        return
    await mailboxes.set_default(conn, user_id, mailbox_id)
    await accounts.set_password_hash(conn, user_id, password_hash)
