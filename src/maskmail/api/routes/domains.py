"""/v3/relay/domains: the user's own domains, the DNS records each needs, and their
checks (docs/api.md, "Custom domains")."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from maskmail import dnscheck
from maskmail.api.deps import CurrentOwner, CurrentSettings, KeyHash, owner_of
from maskmail.api.docs import DESCRIPTIONS, errors_for
from maskmail.api.routes.shared import json
from maskmail.api.schemas import StorableStr
from maskmail.config import Settings
from maskmail.core.custom_domains import CHECKS, CustomDomain
from maskmail.core.records import MAX_ID
from maskmail.http_shared.connection import Conn
from maskmail.services.domains import add_for, recheck
from maskmail.store import custom_domains as store
from maskmail.store.engine import transaction

router = APIRouter(prefix="/v3/relay/domains", tags=["custom domains"])

DomainId = Annotated[int, Path(ge=1, le=MAX_ID, description="The domain's id.")]
_ADD_ERRORS = {
    **DESCRIPTIONS,
    403: "The caller is at `MASKMAIL_MAX_DOMAINS_PER_USER` (`domain_limit_reached`).",
    422: "Not a domain, the relay's own, or added already by anyone (`validation_error`).",
}


class DnsRecord(BaseModel):
    check: str = Field(description="The check this record passes: " + ", ".join(CHECKS) + ".")
    type: str = Field(examples=["TXT", "MX"])
    name: str
    value: str
    priority: int | None = Field(description="An MX record's priority; null for TXT.")


class Checks(BaseModel):
    ownership: bool
    mx: bool
    spf: bool
    dkim: bool
    dmarc: bool


class DomainOut(BaseModel):
    """A custom domain: addresses on it are ``local@domain``."""

    id: int
    domain: str
    verified: bool = Field(description="The ownership record was found: mail is accepted.")
    checks: Checks = Field(description="The latest check of each record.")
    records: list[DnsRecord] = Field(description="The DNS records to create.")
    catch_all: bool = Field(description="Mail to an unknown local part creates that address.")
    created_time: int = Field(description="Unix seconds, UTC.")


class DomainAdd(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    domain: StorableStr = Field(min_length=3, max_length=253, examples=["example.org"])


class DomainChange(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    catch_all: bool


def domain_json(found: CustomDomain, settings: Settings) -> dict[str, Any]:
    return {
        "id": found.id,
        "domain": found.domain,
        "verified": found.verified,
        "checks": found.checks,
        "records": [r.json() for r in dnscheck.expected(found, settings).records()],
        "catch_all": found.catch_all,
        "created_time": found.created_time,
    }


@router.get(
    "",
    response_model=list[DomainOut],
    responses=errors_for(401, 429, 503),
    summary="List the caller's domains",
)
async def list_domains(owner: CurrentOwner, conn: Conn, settings: CurrentSettings) -> Response:
    found = await store.list_domains(conn, owner.user_id)
    return json([domain_json(d, settings) for d in found])


@router.post(
    "",
    response_model=DomainOut,
    responses=errors_for(401, 403, 413, 422, 429, 503, descriptions=_ADD_ERRORS),
    summary="Add a domain",
    description=(
        "The domain is unverified until `POST /v3/relay/domains/{id}/check` finds its "
        "ownership record; until then no mail is accepted for it."
    ),
)
async def add_domain(
    body: DomainAdd, owner: CurrentOwner, conn: Conn, settings: CurrentSettings
) -> Response:
    made = await add_for(conn, owner.user_id, body.domain, settings)
    return json(domain_json(made, settings))


@router.get(
    "/{domain_id:int}",
    response_model=DomainOut,
    responses=errors_for(401, 404, 429, 503),
    summary="Read one domain",
)
async def read_domain(
    domain_id: DomainId, owner: CurrentOwner, conn: Conn, settings: CurrentSettings
) -> Response:
    return json(domain_json(await store.get_domain(conn, owner.user_id, domain_id), settings))


@router.post(
    "/{domain_id:int}/check",
    response_model=DomainOut,
    responses=errors_for(401, 404, 429, 503),
    summary="Look the domain's records up now",
    description=(
        "Looks each record up and updates `checks`. Once the ownership record matches, the "
        "domain is `verified` for good. A look-up that fails for now (a timeout) keeps its "
        "last result."
    ),
)
async def check_domain(
    domain_id: DomainId, request: Request, key_hash: KeyHash, settings: CurrentSettings
) -> Response:
    engine = request.app.state.engine
    async with transaction(engine, readonly=True) as conn:
        owner = await owner_of(request, key_hash, conn)
        found = await store.get_domain(conn, owner.user_id, domain_id)
    return json(domain_json(await recheck(engine, owner.user_id, found, settings), settings))


@router.patch(
    "/{domain_id:int}",
    response_model=DomainOut,
    responses=errors_for(401, 404, 413, 422, 429, 503),
    summary="Switch catch-all",
)
async def change_domain(
    domain_id: DomainId,
    body: DomainChange,
    owner: CurrentOwner,
    conn: Conn,
    settings: CurrentSettings,
) -> Response:
    changed = await store.set_catch_all(conn, owner.user_id, domain_id, body.catch_all)
    return json(domain_json(changed, settings))


@router.delete(
    "/{domain_id:int}",
    status_code=204,
    response_class=Response,
    responses=errors_for(401, 404, 429, 503),
    summary="Delete a domain",
    description=(
        "**Deletes every address on the domain** (as SimpleLogin does); none of them is "
        "ever handed out again."
    ),
)
async def delete_domain(domain_id: DomainId, owner: CurrentOwner, conn: Conn) -> Response:
    await store.remove(conn, owner.user_id, domain_id)
    return Response(status_code=204)
