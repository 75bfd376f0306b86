"""/v3/relay/subdomains: claim, rename, switch and delete the user's relay subdomain, and
choose whether new addresses are made on it (Locker's contract)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from maskmail.api.deps import CurrentOwner, CurrentSettings
from maskmail.api.docs import DESCRIPTIONS, errors_for
from maskmail.api.routes.shared import json
from maskmail.api.schemas import StorableStr
from maskmail.core.records import MAX_ID
from maskmail.core.subdomains import MAX_LENGTH, MIN_LENGTH, NAME_PATTERN, Subdomain
from maskmail.http_shared.connection import Conn
from maskmail.services.subdomains import naming
from maskmail.store import subdomains as store

router = APIRouter(prefix="/v3/relay/subdomains", tags=["relay subdomains"])

SubdomainId = Annotated[int, Path(ge=1, le=MAX_ID, description="The subdomain's id.")]
_CLAIM_ERRORS = {
    **DESCRIPTIONS,
    403: "The caller has a subdomain already (`subdomain_limit_reached`).",
    422: "The name breaks a rule, is taken, or was used before (`validation_error`).",
}
_NAME_DOC = (
    "3 to 63 of `[a-z0-9-]`, not starting or ending with `-`; never used before, and not "
    "a name of the relay's own hosts (`mail`, `smtp`, `mta-sts`, `ns1`, ...). A user takes "
    "at most `MASKMAIL_SUBDOMAIN_NAMES_PER_DAY` names a day (claims and renames; 429 past it)."
)
# Documented for clients, and checked by the rules themselves (core/subdomains.py), so
# that a refusal says what is wrong with the name rather than a pattern's message.
_NAME_SCHEMA: dict[str, Any] = {
    "minLength": MIN_LENGTH,
    "maxLength": MAX_LENGTH,
    "pattern": NAME_PATTERN,
}


class SubdomainOut(BaseModel):
    """A relay subdomain: addresses on it are ``local@subdomain.domain``."""

    id: int
    subdomain: str
    catch_all: bool = Field(description="Mail to an unknown local part creates that address.")
    created_time: int = Field(description="Unix seconds, UTC.")


class SubdomainClaim(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    subdomain: StorableStr = Field(description=_NAME_DOC, json_schema_extra=_NAME_SCHEMA)


class SubdomainChange(BaseModel):
    """Fields to change; omitted ones stay as they are."""

    model_config = ConfigDict(extra="forbid", strict=True)

    subdomain: StorableStr | None = Field(
        default=None, description=_NAME_DOC, json_schema_extra=_NAME_SCHEMA
    )
    catch_all: bool | None = None


class UseSubdomain(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    use_relay_subdomain: bool


def subdomain_json(found: Subdomain) -> dict[str, Any]:
    return {
        "id": found.id,
        "subdomain": found.subdomain,
        "catch_all": found.catch_all,
        "created_time": found.created_time,
    }


@router.get(
    "",
    response_model=list[SubdomainOut],
    responses=errors_for(401, 429, 503),
    summary="List the caller's subdomain (zero or one)",
)
async def list_subdomains(owner: CurrentOwner, conn: Conn) -> Response:
    return json([subdomain_json(s) for s in await store.list_subdomains(conn, owner.user_id)])


@router.post(
    "",
    response_model=SubdomainOut,
    responses=errors_for(401, 403, 413, 422, 429, 503, descriptions=_CLAIM_ERRORS),
    summary="Claim a subdomain",
    description="At most one per user (403 `subdomain_limit_reached`). " + _NAME_DOC,
)
async def claim_subdomain(
    body: SubdomainClaim, owner: CurrentOwner, conn: Conn, settings: CurrentSettings
) -> Response:
    made = await store.claim(conn, owner.user_id, body.subdomain, domain=naming(settings))
    return json(subdomain_json(made))


@router.get(
    "/use_subdomain",
    response_model=UseSubdomain,
    responses=errors_for(401, 429, 503),
    summary="Whether new addresses are made on the subdomain",
)
async def read_use_subdomain(owner: CurrentOwner, conn: Conn) -> Response:
    return json({"use_relay_subdomain": await store.uses_subdomain(conn, owner.user_id)})


@router.put(
    "/use_subdomain",
    response_model=UseSubdomain,
    responses=errors_for(401, 413, 422, 429, 503),
    summary="Make new addresses on the subdomain, or on the domain",
    description="Switching it on needs a subdomain (422 otherwise).",
)
async def put_use_subdomain(body: UseSubdomain, owner: CurrentOwner, conn: Conn) -> Response:
    use = await store.set_use_subdomain(conn, owner.user_id, body.use_relay_subdomain)
    return json({"use_relay_subdomain": use})


@router.put(
    "/{subdomain_id:int}",
    response_model=SubdomainOut,
    responses=errors_for(401, 404, 413, 422, 429, 503),
    summary="Rename the subdomain, or switch catch-all",
    description=(
        "Renaming **deletes every address on the old subdomain** (as Locker does); they and "
        "the old name are never handed out again."
    ),
)
async def change_subdomain(
    subdomain_id: SubdomainId,
    body: SubdomainChange,
    owner: CurrentOwner,
    conn: Conn,
    settings: CurrentSettings,
) -> Response:
    changed = await store.change(
        conn,
        owner.user_id,
        subdomain_id,
        domain=naming(settings),
        name=body.subdomain,
        catch_all=body.catch_all,
    )
    return json(subdomain_json(changed))


@router.delete(
    "/{subdomain_id:int}",
    status_code=204,
    response_class=Response,
    responses=errors_for(401, 404, 429, 503),
    summary="Delete the subdomain",
    description=(
        "**Deletes every address on the subdomain**; new addresses are made on the domain "
        "again. Neither the addresses nor the name are ever handed out again."
    ),
)
async def delete_subdomain(subdomain_id: SubdomainId, owner: CurrentOwner, conn: Conn) -> Response:
    await store.remove(conn, owner.user_id, subdomain_id)
    return Response(status_code=204)
