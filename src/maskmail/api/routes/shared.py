"""What several routers share: the JSON answer, the address id in a path, where a new
address goes, and creating one under the configured limit."""

from __future__ import annotations

import json as stdjson
from typing import Annotated, Any

import orjson
from fastapi import Path, Request
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.responses import Response

from maskmail.api.deps import owner_of
from maskmail.api.schemas import address_json
from maskmail.config import Settings
from maskmail.core.envelope import normal_domain
from maskmail.core.errors import InvalidAddress
from maskmail.core.records import RelayAddress
from maskmail.core.text import unstorable
from maskmail.store import addresses as store
from maskmail.store import custom_domains as custom_domain_store
from maskmail.store import subdomains as subdomain_store
from maskmail.store.engine import transaction

# Ids are 64-bit in the database; anything larger can only be unknown.
AddressId = Annotated[int, Path(ge=1, le=2**63 - 1, description="The address's id.")]


def json(payload: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(payload), status_code=status, media_type="application/json")


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


def has_body(request: Request) -> bool:
    """Whether the request sends a body; on the raw headers (ASGI lower-cases their
    names), under a third of the cost of Starlette's: the create's fast path pays it."""
    for name, value in request.scope["headers"]:
        if name == b"transfer-encoding" or (name == b"content-length" and value != b"0"):
            return True
    return False


def requested_domain(body: bytes) -> str | None:
    """The ``domain`` a create's body names; None for no body, or one without it.

    Bodies were ignored before domains could be named (clients such as Firefox Relay's
    send other fields): only a JSON object with a string ``domain`` counts, and a
    ``domain`` that is neither a string nor null, or one that cannot be stored, is a 422.
    The standard library reads it, as it does every other body: orjson refuses a lone
    surrogate, which would make such a domain pass for no body at all."""
    try:
        parsed = stdjson.loads(body) if body.strip() else None
    except ValueError:
        return None
    domain = parsed.get("domain") if isinstance(parsed, dict) else None
    if domain is not None and not isinstance(domain, str):
        raise InvalidAddress("domain must be a string", {"field": "domain"})
    if domain and (why := unstorable(domain)) is not None:
        raise InvalidAddress(f"domain {why}", {"field": "domain"})
    return domain or None


async def create_on(request: Request, key_hash: str, requested: str) -> Response:
    """``POST /v3/relay/addresses`` naming a domain: through SQLAlchemy, like the
    compatibility routes."""
    settings: Settings = request.app.state.settings
    async with transaction(request.app.state.engine) as conn:
        owner = await owner_of(request, key_hash, conn)
        place, domain = await place_for(conn, owner.user_id, requested, settings)
        made = await generate(conn, owner.user_id, settings, place=place, domain=domain)
    return json(address_json(made))


async def generate(
    conn: AsyncConnection,
    user_id: int,
    settings: Settings,
    description: str = "",
    place: store.Place = store.Place.DEFAULT,
    domain: str | None = None,
) -> RelayAddress:
    """An address for the user, under the configured limit: the compatibility routes'
    way to create (``POST /v3/relay/addresses`` uses ``store.create_for_key``).
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
