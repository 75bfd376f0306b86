"""What several routers share: the JSON answer, the address id in a path, and creating an
address under the configured limit."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import Path
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.responses import Response

from maskmail.config import Settings
from maskmail.core.records import RelayAddress
from maskmail.store import addresses as store

# Ids are 64-bit in the database; anything larger can only be unknown.
AddressId = Annotated[int, Path(ge=1, le=2**63 - 1, description="The address's id.")]


def json(payload: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(payload), status_code=status, media_type="application/json")


async def generate(
    conn: AsyncConnection,
    user_id: int,
    settings: Settings,
    description: str = "",
    place: store.Place = store.Place.DEFAULT,
) -> RelayAddress:
    """An address for the user, under the configured limit: the compatibility routes'
    way to create (``POST /v3/relay/addresses`` uses ``store.create_for_key``)."""
    return await store.create_address(
        conn,
        user_id,
        domain=settings.domain,
        length=settings.address_length,
        limit=settings.max_addresses_per_user,
        description=description,
        place=place,
    )
