"""/v3/relay/addresses: list, generate, read, change and delete relay addresses."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from maskmail.api import listing
from maskmail.api.deps import CurrentOwner, get_key_hash, refuse_unknown_key
from maskmail.api.docs import SchemaPatch, errors_for
from maskmail.api.memo import Memo
from maskmail.api.page_links import links_for
from maskmail.api.routes.shared import (
    AddressId,
    create_on,
    has_body,
    json,
    requested_domain,
)
from maskmail.api.schemas import AddressUpdate, Page, PrivateEmail, address_json
from maskmail.config import Settings
from maskmail.core import paging
from maskmail.http_shared.connection import Conn
from maskmail.store import addresses as store
from maskmail.store import listing as store_listing
from maskmail.store.driver import Checkout, DriverPool

router = APIRouter(prefix="/v3/relay/addresses", tags=["relay addresses"])


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
    # No dependencies on the two hottest routes: the key is counted, then checked and used
    # in the same statement as the data (store/listing.py), on the driver directly.
    key_hash = await get_key_hash(request)
    state = request.app.state
    settings: Settings = state.settings
    drivers: DriverPool = state.drivers
    memo: Memo = state.memo
    want = paging.requested_page(memo.query(request.scope["query_string"]), settings.max_page_size)
    if want is None:
        first = await drivers.run(store_listing.first_chunk(key_hash, listing.CHUNK), bulk=True)
        if first is None:
            await refuse_unknown_key(request)
        return listing.full_body(first, drivers)
    offset = min(want.offset, listing.MAX_OFFSET)
    found = await drivers.run(store_listing.page(key_hash, offset=offset, limit=want.size))
    if found is None:
        await refuse_unknown_key(request)
    return listing.page_body(found, want, links_for(request, settings, memo))


@router.post(
    "",
    response_model=PrivateEmail,
    responses=errors_for(401, 403, 413, 422, 429, 503),
    summary="Generate a new address",
    description=(
        "The new address is enabled, with zero counters. A JSON body may name its "
        '`domain` (`{"domain": "example.org"}`): the relay\'s domain, the caller\'s '
        "subdomain or one of their verified custom domains (422 otherwise). Any other "
        "body, or field, is ignored."
    ),
    openapi_extra={
        "requestBody": {
            "required": False,
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "properties": {
                            "domain": {
                                "type": ["string", "null"],
                                "description": "The relay's domain, the caller's subdomain "
                                "or one of their verified custom domains.",
                            }
                        },
                    }
                }
            },
        }
    },
)
async def create_address(request: Request) -> Response:
    key_hash = await get_key_hash(request)
    settings: Settings = request.app.state.settings
    # Only a request that sends a body leaves the one-statement path.
    if has_body(request) and (requested := requested_domain(await request.body())) is not None:
        return await create_on(request, key_hash, requested)
    drivers: Checkout = request.app.state.drivers
    async with drivers() as driver:
        made = await store.create_for_key(
            driver,
            key_hash,
            domain=settings.domain,
            length=settings.address_length,
            limit=settings.max_addresses_per_user,
        )
    if made is None:
        await refuse_unknown_key(request)
    return json(address_json(made))


@router.get(
    "/{address_id:int}",
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
    "/{address_id:int}",
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
    "/{address_id:int}",
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
    "/{address_id:int}",
    status_code=204,
    response_class=Response,
    responses=errors_for(401, 404, 429, 503),
    summary="Delete an address",
    description="The address stops receiving mail and is never handed out again.",
)
async def delete_address(address_id: AddressId, owner: CurrentOwner, conn: Conn) -> Response:
    await store.delete_address(conn, owner.user_id, address_id)
    return Response(status_code=204)


def document_domain(domain: str) -> SchemaPatch:
    """An OpenAPI patch: the one ``domain`` every caller may name is the relay's (their
    subdomain and custom domains are theirs alone, so no schema lists them)."""

    def patch(schema: dict[str, Any]) -> None:
        body = schema["paths"]["/v3/relay/addresses"]["post"]["requestBody"]
        field = body["content"]["application/json"]["schema"]["properties"]["domain"]
        field.pop("type")
        field["anyOf"] = [{"type": "string", "enum": [domain, ""]}, {"type": "null"}]

    return patch
