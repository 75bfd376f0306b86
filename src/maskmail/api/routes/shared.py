"""What several routers share: the JSON answer, the address id in a path, and the
create that names a domain (services/addresses.py makes the address)."""

from __future__ import annotations

import json as stdjson
from typing import Annotated, Any

import orjson
from fastapi import Path, Request
from starlette.responses import Response

from maskmail.api.deps import owner_of
from maskmail.api.schemas import address_json
from maskmail.config import Settings
from maskmail.core.errors import InvalidAddress
from maskmail.core.records import MAX_ID
from maskmail.core.text import unstorable
from maskmail.services.addresses import generate, place_for
from maskmail.store.engine import transaction

# Ids are 64-bit in the database; anything larger can only be unknown.
AddressId = Annotated[int, Path(ge=1, le=MAX_ID, description="The address's id.")]


def json(payload: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(payload), status_code=status, media_type="application/json")


def has_body(request: Request) -> bool:
    """Whether the request sends a body; on the raw headers (ASGI lower-cases their
    names), cheaper than Starlette's parsed headers: the create's fast path pays it."""
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
