"""/v3/relay/addresses: list, generate, read, change and delete relay addresses."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Path, Query, Request
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.responses import Response

from maskmail.api.deps import Conn, CurrentOwner, CurrentSettings
from maskmail.api.docs import errors_for
from maskmail.api.schemas import AddressUpdate, Page, PrivateEmail, address_json
from maskmail.api.urls import public_url, with_page
from maskmail.config import Settings
from maskmail.core import paging
from maskmail.core.records import RelayAddress
from maskmail.store import addresses as store

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
)
async def list_addresses(
    request: Request,
    owner: CurrentOwner,
    conn: Conn,
    settings: CurrentSettings,
    page: Annotated[str | None, Query(description="Page number (default 1).")] = None,
    paging_: Annotated[
        str | None, Query(alias="paging", description="1 to page; anything else lists all.")
    ] = None,
    size: Annotated[
        str | None, Query(description="Page size (default 10, clamped to the maximum).")
    ] = None,
) -> Response:
    if not paging.wants_paging(paging_):
        everything = await store.list_addresses(conn, owner.user_id)
        return json([address_json(r) for r in everything])
    want = paging.page_request(page, size, settings.max_page_size)
    count, rows = await store.page_addresses(
        conn, owner.user_id, offset=want.offset, limit=want.size
    )
    url = public_url(request, settings)
    return json(
        {
            "count": count,
            "next": with_page(url, want.page + 1) if paging.has_next(want, count) else None,
            "previous": with_page(url, want.page - 1) if want.page > 1 else None,
            "results": [address_json(r) for r in rows],
        }
    )


@router.post(
    "",
    response_model=PrivateEmail,
    responses=errors_for(401, 403, 413, 429, 503),
    summary="Generate a new address",
    description="Any request body is ignored. The new address is enabled, with zero counters.",
)
async def create_address(owner: CurrentOwner, conn: Conn, settings: CurrentSettings) -> Response:
    return json(address_json(await generate(conn, owner.user_id, settings)))


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
