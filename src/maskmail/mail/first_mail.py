"""Addresses made on first mail: an unknown local part at a user's relay subdomain or
verified custom domain, while its catch-all is on, becomes that user's address at RCPT,
then mail flows as to any other address. Asked by the SMTP handler and the policy
service alike, through ``recipients.check_recipient``."""

from __future__ import annotations

import logging

from maskmail.core.envelope import Mailbox
from maskmail.core.errors import (
    AddressNotFound,
    AddressTaken,
    InvalidAddress,
    LimitReached,
    RateLimited,
)
from maskmail.core.first_mail import catch_all_local, first_mail_description
from maskmail.mail import custom_domains
from maskmail.mail.context import MailContext
from maskmail.store import subdomains as subdomain_store
from maskmail.store.addresses import Place, create_address

log = logging.getLogger(__name__)


async def make(
    ctx: MailContext, mailbox: Mailbox, domain: str, subdomain: str, mail_from: str
) -> bool:
    """Make ``mailbox`` (at ``subdomain.domain``) for the subdomain's owner. True when it
    was made here, False when a concurrent message made it first; AddressNotFound when
    it may not be made (no such subdomain, catch-all off, used before, over the limit),
    RateLimited when this sender made too many lately."""
    async with ctx.drivers() as driver:
        holder = await subdomain_store.holder(driver, subdomain)
    if holder is None:
        raise AddressNotFound("no such address")
    return await _make(
        ctx,
        mailbox,
        holder.user_id,
        holder.catch_all,
        domain,
        mail_from,
        Place.SUBDOMAIN,
        subdomain,
    )


async def make_at_domain(ctx: MailContext, mailbox: Mailbox, mail_from: str) -> bool:
    """``make``, for ``mailbox`` at a verified custom domain, for the domain's owner."""
    holder = await custom_domains.holder(ctx, mailbox.domain)
    if holder is None:
        raise AddressNotFound("no such address")
    return await _make(
        ctx, mailbox, holder.user_id, holder.catch_all, mailbox.domain, mail_from, Place.DOMAIN
    )


async def _make(
    ctx: MailContext,
    mailbox: Mailbox,
    user_id: int,
    catch_all: bool,
    domain: str,
    mail_from: str,
    place: Place,
    on: str | None = None,
) -> bool:
    if not catch_all:
        raise AddressNotFound("no such address")
    local = catch_all_local(mailbox.local)
    now = ctx.clock().timestamp()
    if not ctx.first_mail.take(mail_from, now):
        raise RateLimited("too many new addresses from this sender", int(ctx.first_mail.window))
    try:
        async with ctx.drivers() as driver, driver.writing():
            made = await create_address(
                driver,
                user_id,
                domain=domain,
                length=len(local),
                limit=ctx.max_addresses_per_user,
                description=first_mail_description(mail_from),
                place=place,
                on=on,
                local=local,
            )
    except AddressTaken:
        ctx.first_mail.give_back(mail_from, now)
        return False  # made meanwhile, or used before: the caller looks again
    except (InvalidAddress, LimitReached) as exc:
        # Renamed meanwhile, or the owner is at the limit: the address does not exist.
        ctx.first_mail.give_back(mail_from, now)
        raise AddressNotFound("no such address") from exc
    log.info("address %d made on first mail", made.id)
    return True
