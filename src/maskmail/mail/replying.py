"""Mail to a reverse alias: the owner writing, through their relay address, to the
outside sender the alias stands for. Only the owner may; nobody else learns anything."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from email.message import Message
from typing import Any

from maskmail.core import mailboxes, senders
from maskmail.core.envelope import Mailbox
from maskmail.core.errors import AddressNotFound, DeliveryDeferred, DeliveryRefused
from maskmail.core.verdict import Action, ReplyFacts, Verdict, decide_reply
from maskmail.mail import custom_domains, rewrite
from maskmail.mail.context import MailContext, envelope_sender, peer_ip
from maskmail.mail.counting import count
from maskmail.mail.reply_rewrite import Reply, rewrite_reply
from maskmail.store import mailflow

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Route:
    route: mailflow.ReplyRoute
    # The address's mailboxes, which may send through it; every one of the owner's.
    senders: tuple[str, ...]
    everyone: tuple[str, ...]

    def sender(self, address: str) -> str | None:
        """The address's mailbox ``address`` is, if any."""
        return next((m for m in self.senders if senders.same_mailbox(address, m)), None)


async def _route(ctx: MailContext, mailbox: Mailbox) -> _Route:
    async with ctx.drivers() as driver:
        route = await mailflow.find_reply_route(driver, mailbox.local, mailbox.domain)
        if route is None:
            raise AddressNotFound("no such address")
        boxes = await mailflow.destinations(driver, route.address.user_id, route.address.id)
    return _Route(route, mailboxes.senders(boxes), tuple(m.email for m in boxes))


def _refuse_unless_reply(verdict: Verdict) -> None:
    if verdict.action is not Action.REPLY:
        raise verdict.refusal(verdict.reason)


async def check_may_reply(ctx: MailContext, mailbox: Mailbox, mail_from: str) -> None:
    """At RCPT: a stranger or a disabled address is refused before any data is sent."""
    found = await _route(ctx, mailbox)
    facts = ReplyFacts(envelope_is_owner=found.sender(mail_from) is not None)
    _refuse_unless_reply(decide_reply(found.route.address, facts, found.route.outside))


def _from_addresses(headers: Message) -> list[str] | None:
    """Every address in the From header(s); None when it cannot be read, or is too long
    to parse safely (see ``rewrite.MAX_ADDRESS_HEADER``)."""
    raw = rewrite.named(headers, "from")
    if any(len(value) > rewrite.MAX_ADDRESS_HEADER for _, value in raw):
        return None
    try:
        found = [
            address.addr_spec for name, value in raw for address in rewrite.addresses(name, value)
        ]
    except (ValueError, IndexError, TypeError, AttributeError, RecursionError):
        # The email package's address parser raises all of these on hostile headers.
        return None
    return found


def _authentication(
    ctx: MailContext, session: Any, headers: Message, owner: str
) -> senders.Authentication | None:
    """What a trusted relay says about the owner's domain; None from anyone else, whose
    Authentication-Results could say anything."""
    if not ctx.judge.trusts(peer_ip(session)):
        return None
    fields = rewrite.named(headers, "authentication-results")
    values = [str(v) for v in rewrite.structured(fields)]
    if not values:
        return None
    domain = owner.rpartition("@")[2]
    return senders.authentication(values, domain, ctx.authserv_ids)


async def reply(ctx: MailContext, session: Any, env: Any, mailbox: Mailbox) -> None:
    """Check the sender again with the headers, rewrite, send, and count the reply."""
    raw: bytes = env.original_content
    found = await _route(ctx, mailbox)
    route = found.route
    header_block, _ = rewrite.split_message(raw)
    headers = rewrite.parse_headers(header_block)
    authors = _from_addresses(headers) or []
    sender = found.sender(envelope_sender(env))
    facts = ReplyFacts(
        envelope_is_owner=sender is not None,
        # Exactly one author, and it is the mailbox that sent: a second From could be anyone.
        header_is_owner=sender is not None
        and len(authors) == 1
        and senders.same_mailbox(authors[0], sender),
        authentication=None if sender is None else _authentication(ctx, session, headers, sender),
    )
    verdict = decide_reply(route.address, facts, route.outside)
    log.info("reply through address %d: %s", route.address.id, verdict.action)
    _refuse_unless_reply(verdict)
    assert sender is not None  # the verdict refused anyone else
    relay = route.address.full_address
    # Parsing and rewriting a large reply takes seconds of CPU: in a thread, so the
    # event loop keeps serving other sessions meanwhile.
    message = await asyncio.get_running_loop().run_in_executor(
        ctx.rewriters,
        rewrite_reply,
        raw,
        Reply(
            owner_mailbox=sender,
            relay_address=relay,
            outside=route.outside,
            display_name=rewrite.origin(headers, "").display_name if route.show_name else "",
            domain=ctx.domain,
            when=ctx.clock(),
            scrubbed=found.everyone,
        ),
    )
    message = await custom_domains.sign(
        ctx, message, custom_domains.mail_domain(ctx, route.address)
    )
    try:
        # From the relay address: a bounce of the reply reaches the owner as mail to it.
        await ctx.outbound.deliver(message, sender=relay, recipient=route.outside)
    except (DeliveryDeferred, DeliveryRefused) as exc:
        log.info("reply through address %d not delivered: %s", route.address.id, exc.message)
        raise
    await count(ctx, route.address.id, verdict, sent=True)
