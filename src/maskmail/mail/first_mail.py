"""The mail plane's first mail, by the first-mail rules (``core/first_mail.py``): an
unknown local part at a user's relay subdomain or
verified custom domain, while its catch-all is on, becomes that user's address.

At RCPT it is only decided (``check``), by the SMTP handler and the policy service alike,
through ``recipients.check_may_receive``: nothing is written for a recipient whose message
may never come. The address is made once the message is in (``make``, from
``forwarding.forward``), under the owner's limits, and unmade when the message is then not
accepted (``unmake``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from maskmail.core import envelope
from maskmail.core.addresses import full_address
from maskmail.core.envelope import Mailbox, normal_domain
from maskmail.core.errors import (
    AddressNotFound,
    AddressTaken,
    InvalidAddress,
    LimitReached,
    RateLimited,
)
from maskmail.core.first_mail import check_owner, first_mail_description, first_mail_local
from maskmail.core.records import RelayAddress
from maskmail.mail import custom_domains
from maskmail.mail.context import MailContext
from maskmail.store import first_mail as store
from maskmail.store import subdomains as subdomain_store
from maskmail.store.addresses import Place

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Target:
    """The address catch-all would make: whose, where, and its local part."""

    user_id: int
    local: str
    domain: str
    place: Place
    on: str | None = None

    @property
    def full_address(self) -> str:
        return full_address(self.local, self.domain, self.on)


async def _target(ctx: MailContext, mailbox: Mailbox) -> Target:
    """Whose address ``mailbox`` would be, if catch-all may make it at all: AddressNotFound
    when not (no holder, catch-all off, a name it never makes), InvalidAddress for a local
    part outside the rule."""
    where = envelope.placed(mailbox, ctx.domains)
    if where is None:
        held = await custom_domains.holder(ctx, mailbox.domain)
        user_id, catch_all = (held.user_id, held.catch_all) if held else (0, False)
        domain, place, on = mailbox.domain, Place.DOMAIN, None
    else:
        domain, on = where
        # Subdomains are claimed under MASKMAIL_DOMAIN only, never under older domains.
        if on is None or domain != normal_domain(ctx.domain):
            raise AddressNotFound("no such address")
        async with ctx.drivers() as driver:
            holder = await subdomain_store.holder(driver, on)
        user_id, catch_all = (holder.user_id, holder.catch_all) if holder else (0, False)
        place = Place.SUBDOMAIN
    if not catch_all:
        raise AddressNotFound("no such address")
    return Target(user_id, first_mail_local(mailbox.local), domain, place, on)


def _now(ctx: MailContext) -> int:
    return int(ctx.clock().timestamp())


def _sender_flood(ctx: MailContext) -> RateLimited:
    return RateLimited("too many new addresses from this sender", int(ctx.first_mail.window))


async def check(ctx: MailContext, mailbox: Mailbox, mail_from: str) -> str:
    """At RCPT: the owner's mailbox when an address would be made for ``mailbox``, and
    nothing written. Otherwise AddressNotFound (see ``_target``; used before; the owner
    at MASKMAIL_MAX_ADDRESSES_PER_USER), RateLimited (this sender made too many
    lately) or CatchAllPaused (the owner's catch-all did)."""
    target = await _target(ctx, mailbox)
    now = _now(ctx)
    if not ctx.first_mail.allows(mail_from, now):
        raise _sender_flood(ctx)
    async with ctx.drivers() as driver:
        found = await store.facts(
            driver, target.user_id, target.full_address, ctx.first_mail_limits, now
        )
    limit = ctx.max_addresses_per_user
    if found is None or found.used_before or (limit and found.addresses >= limit):
        raise AddressNotFound("no such address")
    check_owner(found.made, ctx.first_mail_limits)
    return found.owner_mailbox


async def make(ctx: MailContext, mailbox: Mailbox, mail_from: str) -> RelayAddress | None:
    """Once the message is in: the address made for it, or None when a concurrent message
    made it first. Refused as ``check`` refuses, rules and limits checked again under the
    owner's lock."""
    target = await _target(ctx, mailbox)
    now = _now(ctx)
    if not ctx.first_mail.take(mail_from, now):
        raise _sender_flood(ctx)
    try:
        async with ctx.drivers() as driver:
            made = await store.make(
                driver,
                target.user_id,
                domain=target.domain,
                local=target.local,
                place=target.place,
                on=target.on,
                description=first_mail_description(mail_from),
                address_limit=ctx.max_addresses_per_user,
                limits=ctx.first_mail_limits,
                now=now,
            )
    except AddressTaken:
        ctx.first_mail.give_back(mail_from, now)
        return None  # made meanwhile, or used before: the caller looks again
    except (InvalidAddress, LimitReached) as exc:
        # Renamed meanwhile, or the owner is at the limit: the address does not exist.
        ctx.first_mail.give_back(mail_from, now)
        raise AddressNotFound("no such address") from exc
    except BaseException:
        ctx.first_mail.give_back(mail_from, now)
        raise
    log.info("address %d made on first mail", made.id)
    return made


async def unmake(ctx: MailContext, made: RelayAddress) -> None:
    """The message that made ``made`` was not accepted: the address goes, as if it had
    never been made, so the sender's retry meets the same rules again."""
    async with ctx.drivers() as driver:
        if await store.unmake(driver, made):
            log.info("address %d unmade: its first message was not accepted", made.id)
