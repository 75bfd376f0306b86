"""The periodic re-check of every custom domain (``maskmail domains check``, for a
timer): a record that passed and went away is marked, and the owner is told once, at
their default mailbox, through the outbound path forwards take."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from maskmail import dnscheck
from maskmail.config import Settings
from maskmail.core import custom_domains as rules
from maskmail.core.custom_domains import CustomDomain
from maskmail.services.sending import Sender
from maskmail.store import custom_domains as store
from maskmail.store.engine import transaction

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Outcome:
    domain: str
    gone: list[str]  # the checks that passed before and fail now
    warned: bool  # the owner was told now


async def check_all(settings: Settings, engine: AsyncEngine, outbound: Sender) -> list[Outcome]:
    """Check each domain, keep the results, and warn owners whose records went away."""
    async with transaction(engine, readonly=True) as conn:
        found = await store.every_domain(conn)
    return [await _check(settings, engine, outbound, one) for one in found]


async def _check(
    settings: Settings, engine: AsyncEngine, outbound: Sender, found: CustomDomain
) -> Outcome:
    checks = await dnscheck.checks_now(found, settings)
    gone = rules.went_away(found.checks, checks)
    # Once per loss: the warning is stamped, and cleared when every check passes again.
    warn = bool(gone) and found.verified and found.warned_time is None
    async with transaction(engine) as conn:
        if warn:
            await _warn(settings, outbound, conn, found, gone)
        cleared = False if all(checks.values()) else None
        await store.record_check(conn, found.id, checks, warned=True if warn else cleared)
    if gone:
        log.warning("domain %d: checks no longer pass: %s", found.id, ", ".join(gone))
    return Outcome(found.domain, gone, warn)


async def _warn(
    settings: Settings,
    outbound: Sender,
    conn: AsyncConnection,
    found: CustomDomain,
    gone: list[str],
) -> None:
    to = await store.default_mailbox(conn, found.user_id)
    if to is None:
        return
    message = rules.warning_message(
        to=to,
        sender=f"domains@{settings.domain}",
        domain=found.domain,
        gone=gone,
        when=time.time(),
    )
    # Inside the transaction: a warning not sent is not stamped, and the next run retries.
    await outbound.deliver(message, sender="", recipient=to)
