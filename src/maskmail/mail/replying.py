"""Mail to a reverse alias: the owner writing, through their relay address, to the
outside sender the alias stands for. Only the owner may; nobody else learns anything."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from maskmail.core import senders
from maskmail.core.envelope import Mailbox
from maskmail.core.errors import AddressNotFound, DeliveryDeferred, DeliveryRefused
from maskmail.core.verdict import Action, ReplyFacts, Verdict, decide_reply
from maskmail.mail import rewrite
from maskmail.mail.context import MailContext, envelope_sender, peer_ip
from maskmail.mail.counting import count
from maskmail.mail.reply_rewrite import Reply, rewrite_reply
from maskmail.store import mailflow
from maskmail.store.engine import transaction

log = logging.getLogger(__name__)
# Threads of their own: the default executor also resolves host names, and must never
# wait behind rewrites (nor they behind it).
_REWRITERS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="reply-rewrite")


async def _route(ctx: MailContext, mailbox: Mailbox) -> mailflow.ReplyRoute:
    async with transaction(ctx.engine, readonly=True) as conn:
        route = await mailflow.find_reply_route(conn, mailbox.local, mailbox.domain)
    if route is None:
        raise AddressNotFound("no such address")
    return route


def _refuse_unless_reply(verdict: Verdict) -> None:
    if verdict.action is not Action.REPLY:
        raise verdict.refusal(verdict.reason)


async def check_recipient(ctx: MailContext, mailbox: Mailbox, mail_from: str) -> None:
    """At RCPT: a stranger or a disabled address is refused before any data is sent."""
    route = await _route(ctx, mailbox)
    facts = ReplyFacts(envelope_is_owner=senders.same_mailbox(mail_from, route.owner_mailbox))
    _refuse_unless_reply(decide_reply(route.address, facts, route.outside))


def _from_addresses(headers: Any) -> list[str] | None:
    """Every address in the From header(s); None when it cannot be read, or is too long
    to parse safely (see ``rewrite.MAX_ADDRESS_HEADER``)."""
    raw = [value for name, value in headers.raw_items() if name.lower() == "from"]
    if any(len(value) > rewrite.MAX_ADDRESS_HEADER for value in raw):
        return None
    try:
        found = [
            address.addr_spec
            for header in headers.get_all("from") or []
            for address in getattr(header, "addresses", ())
        ]
    except (ValueError, IndexError, TypeError, AttributeError, RecursionError):
        # The email package's address parser raises all of these on hostile headers.
        return None
    return found


def _authentication(
    ctx: MailContext, session: Any, headers: Any, owner: str
) -> senders.Authentication | None:
    """What a trusted relay says about the owner's domain; None from anyone else, whose
    Authentication-Results could say anything."""
    if not ctx.judge.trusts(peer_ip(session)):
        return None
    values = [str(v) for v in headers.get_all("authentication-results") or []]
    if not values:
        return None
    domain = owner.rpartition("@")[2]
    return senders.authentication(values, domain, ctx.authserv_ids)


async def reply(ctx: MailContext, session: Any, env: Any, mailbox: Mailbox) -> None:
    """Check the sender again with the headers, rewrite, send, and count the reply."""
    raw: bytes = env.original_content
    route = await _route(ctx, mailbox)
    header_block, _ = rewrite.split_message(raw)
    headers = rewrite.parse_headers(header_block)
    authors = _from_addresses(headers) or []
    facts = ReplyFacts(
        envelope_is_owner=senders.same_mailbox(envelope_sender(env), route.owner_mailbox),
        # Exactly one author, and it is the owner: a second From could be anyone.
        header_is_owner=len(authors) == 1 and senders.same_mailbox(authors[0], route.owner_mailbox),
        authentication=_authentication(ctx, session, headers, route.owner_mailbox),
    )
    verdict = decide_reply(route.address, facts, route.outside)
    log.info("reply through address %d: %s", route.address.id, verdict.action)
    _refuse_unless_reply(verdict)
    relay = route.address.full_address
    # Parsing and rewriting a large reply takes seconds of CPU: in a thread, so the
    # event loop keeps serving other sessions meanwhile.
    message = await asyncio.get_running_loop().run_in_executor(
        _REWRITERS,
        rewrite_reply,
        raw,
        Reply(
            owner_mailbox=route.owner_mailbox,
            relay_address=relay,
            outside=route.outside,
            display_name=rewrite.origin(headers, "").display_name if route.show_name else "",
            domain=ctx.domain,
            when=ctx.clock(),
        ),
    )
    if ctx.signer is not None:
        message = await ctx.signer.sign(message)
    try:
        # From the relay address: a bounce of the reply reaches the owner as mail to it.
        await ctx.outbound.deliver(message, sender=relay, recipient=route.outside)
    except (DeliveryDeferred, DeliveryRefused) as exc:
        log.info("reply through address %d not delivered: %s", route.address.id, exc.message)
        raise
    await count(ctx, route.address.id, verdict, sent=True)
