"""/v3/relay/addresses: list, generate, read, change and delete relay addresses."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Path, Request
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.responses import Response

from maskmail.api import listing
from maskmail.api.deps import Conn, CurrentOwner, get_key_hash, refuse_unknown_key
from maskmail.api.docs import errors_for
from maskmail.api.schemas import AddressUpdate, Page, PrivateEmail, address_json
from maskmail.config import Settings
from maskmail.core import paging
from maskmail.core.records import RelayAddress
from maskmail.store import addresses as store
from maskmail.store import wire
from maskmail.store.raw import RawSource

router = APIRouter(prefix="/v3/relay/addresses", tags=["relay addresses"])

# Ids are 64-bit in the database; anything larger can only be unknown.
AddressId = Annotated[int, Path(ge=1, le=2**63 - 1, description="The address's id.")]


def json(payload: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(payload), status_code=status, media_type="application/json")


async def generate(
    conn: AsyncConnection, user_id: int, settings: Settings, description: str = ""
) -> RelayAddress:
    """The one way every door of the API creates an address: under the configured limit."""
    return await store.create_address(
        conn,
        user_id,
        domain=settings.domain,
        length=settings.address_length,
        limit=settings.max_addresses_per_user,
        description=description,
    )


def _query(name: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": {"anyOf": [{"type": "string"}, {"type": "null"}], "title": name.title()},
        "description": description,
    }


# The list route reads its query itself (it never fails on it), so the parameters are
# documented here rather than declared: each declared parameter costs FastAPI work per request.
_LIST_QUERY = {
    "parameters": [
        _query("page", "Page number (default 1)."),
        _query("paging", "1 to page; anything else lists all."),
        _query("size", "Page size (default 10, clamped to the maximum)."),
    ]
}


@router.get(
    "",
    response_model=list[PrivateEmail] | Page,
    responses=errors_for(401, 429, 503),
    summary="List the caller's addresses",
    description=(
        "A plain array of all addresses, oldest first. With `paging=1`, one page of them "
        "in a page wrapper. Query values that are not positive integers fall back to their "
        "defaults; listing never fails for its query."
    ),
    openapi_extra=_LIST_QUERY,
)
async def list_addresses(request: Request) -> Response:
    # No dependencies on the two hottest routes: the key is counted, checked and used in
    # the same statement as the data (store/wire.py), on the driver directly.
    key_hash = await get_key_hash(request)
    if paging.wants_paging(listing.query_of(request).get("paging")):
        return await listing.page_body(request, key_hash, request.app.state.settings)
    return await listing.full_body(request, key_hash)


@router.post(
    "",
    response_model=PrivateEmail,
    responses=errors_for(401, 403, 413, 429, 503),
    summary="Generate a new address",
    description="Any request body is ignored. The new address is enabled, with zero counters.",
)
async def create_address(request: Request) -> Response:
    key_hash = await get_key_hash(request)
    settings: Settings = request.app.state.settings
    source: RawSource = request.app.state.raw
    async with source() as raw:
        made = await wire.create_for_key(
            raw,
            key_hash,
            domain=settings.domain,
            length=settings.address_length,
            limit=settings.max_addresses_per_user,
        )
    if made is None:
        await refuse_unknown_key(request)
    return json(address_json(made))


@router.get(
    "/{address_id}",
    response_model=PrivateEmail,
    responses=errors_for(401, 404, 429, 503),
    summary="Read one address",
)
async def read_address(address_id: AddressId, owner: CurrentOwner, conn: Conn) -> Response:
    return json(address_json(await store.get_address(conn, owner.user_id, address_id)))


async def _update(owner_id: int, address_id: int, body: AddressUpdate, conn: Conn) -> Response:
    changed = await store.update_address(conn, owner_id, address_id, body.changes())
    return json(address_json(changed))


_UPDATE_DOC = (
    "Changes only the fields sent (`description`, `enabled`, `block_spam`) and stamps "
    "`updated_time`. Any other field, a null, or a wrong type is a 422 and changes nothing."
)


@router.patch(
    "/{address_id}",
    response_model=PrivateEmail,
    responses=errors_for(401, 404, 413, 422, 429, 503),
    summary="Change an address",
    description=_UPDATE_DOC,
)
async def patch_address(
    address_id: AddressId, body: AddressUpdate, owner: CurrentOwner, conn: Conn
) -> Response:
    return await _update(owner.user_id, address_id, body, conn)


@router.put(
    "/{address_id}",
    response_model=PrivateEmail,
    responses=errors_for(401, 404, 413, 422, 429, 503),
    summary="Change an address (same as PATCH)",
    description=_UPDATE_DOC,
)
async def put_address(
    address_id: AddressId, body: AddressUpdate, owner: CurrentOwner, conn: Conn
) -> Response:
    return await _update(owner.user_id, address_id, body, conn)


@router.delete(
    "/{address_id}",
    status_code=204,
    response_class=Response,
    responses=errors_for(401, 404, 429, 503),
    summary="Delete an address",
    description="The address stops receiving mail and is never handed out again.",
)
async def delete_address(address_id: AddressId, owner: CurrentOwner, conn: Conn) -> Response:
    await store.delete_address(conn, owner.user_id, address_id)
    return Response(status_code=204)
