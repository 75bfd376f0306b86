"""Making an address: where a new one goes, and creating it under the configured limit
(the API's create naming a domain, the compatibility routes and the dashboard)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.config import Settings
from maskmail.core.envelope import normal_domain
from maskmail.core.errors import InvalidAddress
from maskmail.core.records import RelayAddress
from maskmail.store import addresses as store
from maskmail.store import custom_domains as custom_domain_store
from maskmail.store import subdomains as subdomain_store


async def subdomain_hosts(conn: AsyncConnection, user_id: int, domain: str) -> list[str]:
    return [f"{s.subdomain}.{domain}" for s in await subdomain_store.list_subdomains(conn, user_id)]


async def place_for(
    conn: AsyncConnection, user_id: int, requested: str | None, settings: Settings
) -> tuple[store.Place, str]:
    """Where a new address goes, and at which domain: the relay's domain, the caller's
    subdomain, one of the caller's verified custom domains, or (none named) as the
    caller chose with ``use_relay_subdomain``."""
    if requested is None or not requested.strip():
        return store.Place.DEFAULT, settings.domain
    host = normal_domain(requested)
    if host == settings.domain:
        return store.Place.DOMAIN, settings.domain
    if host in await subdomain_hosts(conn, user_id, settings.domain):
        return store.Place.SUBDOMAIN, settings.domain
    if await custom_domain_store.verified_domain(conn, user_id, host):
        return store.Place.DOMAIN, host
    raise InvalidAddress(
        f"'{requested.strip()[:100]}' is not a domain of this server or a verified domain "
        f"of yours; use {settings.domain}",
        {"field": "domain"},
    )


async def generate(
    conn: AsyncConnection,
    user_id: int,
    settings: Settings,
    description: str = "",
    place: store.Place = store.Place.DEFAULT,
    domain: str | None = None,
) -> RelayAddress:
    """An address for the user, under the configured limit: every door's way to create
    but the API's fast path (``POST /v3/relay/addresses`` with no domain uses
    ``store.create_for_key``).
    ``domain``: a custom domain (``place_for`` says which), else the relay's."""
    return await store.create_address(
        conn,
        user_id,
        domain=domain or settings.domain,
        length=settings.address_length,
        limit=settings.max_addresses_per_user,
        description=description,
        place=place,
    )
