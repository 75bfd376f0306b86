"""A user's own domains: adding one with its token and DKIM key, and checking its DNS
records (the API's and the dashboard's way)."""

from __future__ import annotations

import asyncio
import secrets

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from maskmail import dnscheck
from maskmail.config import Settings
from maskmail.core import custom_domains as rules
from maskmail.core.custom_domains import CustomDomain
from maskmail.core.dkim_keys import generate_key, txt_value
from maskmail.services.relay_domains import relay_domains
from maskmail.services.user_limits import domain_limit
from maskmail.store import custom_domains as store
from maskmail.store.engine import transaction


async def not_for_users(conn: AsyncConnection, settings: Settings) -> frozenset[str]:
    """What no user may add, nor a host below it: the relay's domains, and its mail host
    name, whose MX a user's domain would otherwise claim."""
    return await relay_domains(conn, settings.domain) | {settings.mail_hostname.lower()}


async def add_for(
    conn: AsyncConnection, user_id: int, name: str, settings: Settings
) -> CustomDomain:
    """Add ``name`` for the user with a token and DKIM key of its own."""
    refused = await not_for_users(conn, settings)
    # The cheap refusals before the key, which is slow to make.
    rules.refuse_relay_domain(rules.check_domain(name), refused)
    private, public = await asyncio.to_thread(generate_key)
    return await store.add_domain(
        conn,
        user_id,
        name,
        relay_domains=refused,
        limit=await domain_limit(conn, user_id, settings),
        token=secrets.token_hex(16),
        selector=f"{settings.dkim_selector}-{secrets.token_hex(3)}",
        private_key=private,
        dkim_txt=txt_value(public),
    )


async def recheck(
    engine: AsyncEngine, user_id: int, found: CustomDomain, settings: Settings
) -> CustomDomain:
    """Look ``found``'s records up now and keep the results; called with no transaction
    open, since DNS may be slow to answer and on SQLite a writing one would hold the
    database's write lock all that time."""
    checks = await dnscheck.checks_now(found, settings)
    async with transaction(engine) as conn:
        await store.record_check(
            conn, found.id, checks, warned=False if all(checks.values()) else None
        )
        return await store.get_domain(conn, user_id, found.id)
