"""addy.io-compatible alias creation, as Bitwarden, Keyguard and the addy.io extension call it.

Clients read ``data.email`` from a 201 and ``message`` from an error; the addy.io
extension also reads ``errors.<field>[0]`` from a 422, as Laravel sends it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from maskmail.api.contracts import contract_errors, contract_route
from maskmail.api.deps import CurrentOwner, CurrentSettings
from maskmail.api.docs import SchemaPatch
from maskmail.api.routes.shared import json
from maskmail.api.schemas import NulFreeStr, StorableStr
from maskmail.core.descriptions import clean_description
from maskmail.core.records import RelayAddress
from maskmail.http_shared.connection import Conn
from maskmail.http_shared.problems import Problem
from maskmail.services.addresses import generate, place_for, subdomain_hosts
from maskmail.store import custom_domains as custom_domain_store
from maskmail.store import subdomains as subdomain_store

TAG = "compatibility: addy.io"
DEFAULT_FORMAT = "random_characters"


class AddyError(BaseModel):
    """addy.io's error body; ``errors`` only on a 422."""

    message: str = Field(examples=["Unauthenticated."])
    errors: dict[str, list[str]] | None = Field(
        default=None, description="On 422: the offending field and why."
    )


def render_error(found: Problem) -> dict[str, Any]:
    body: dict[str, Any] = {"message": found.message}
    if found.status == 422:
        body["errors"] = {field: [msg] for field, msg in found.fields().items()} or {
            "body": [found.message]
        }
    return body


router = APIRouter(prefix="/api/v1", tags=[TAG], route_class=contract_route(render_error))


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return contract_errors(
        AddyError,
        statuses,
        {422: "`domain` is not this server's domain, or the body is not a JSON object."},
    )


class CreateAlias(BaseModel):
    """What addy.io clients send. Fields maskmail cannot honour are accepted and ignored."""

    model_config = ConfigDict(extra="allow")

    domain: StorableStr | None = Field(
        default=None,
        description="This server's domain or the caller's subdomain of it (as "
        "`domain-options` lists them); omitted means the default.",
    )
    description: NulFreeStr | None = Field(
        default=None,
        description="Control characters removed, cut to 64 characters.",
    )
    format: NulFreeStr | None = Field(default=None, description="Ignored: addresses are random.")
    local_part: NulFreeStr | None = Field(default=None, description="Ignored.")
    recipient_ids: list[Any] | None = Field(default=None, description="Ignored.")


class Alias(BaseModel):
    id: str
    email: str
    local_part: str
    domain: str
    extension: None
    active: bool
    description: str | None
    created_at: str = Field(description="UTC, `YYYY-MM-DD HH:MM:SS`.")
    updated_at: str


class AliasEnvelope(BaseModel):
    data: Alias


class DomainOptions(BaseModel):
    data: list[str]
    defaultAliasDomain: str  # noqa: N815 - addy.io's field name
    defaultAliasFormat: str  # noqa: N815


def document_domain(domain: str) -> SchemaPatch:
    """An OpenAPI patch: the only domain ``CreateAlias`` accepts is the configured one."""

    def patch(schema: dict[str, Any]) -> None:
        field = schema["components"]["schemas"]["CreateAlias"]["properties"]["domain"]
        field["anyOf"] = [{"type": "string", "enum": [domain, ""]}, {"type": "null"}]

    return patch


def _timestamp(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S")


def alias_json(rec: RelayAddress) -> dict[str, Any]:
    return {
        "id": str(rec.id),
        "email": rec.full_address,
        "local_part": rec.address,
        "domain": rec.full_address.partition("@")[2],
        "extension": None,
        "active": rec.enabled,
        "description": rec.description or None,
        "created_at": _timestamp(rec.created_time),
        "updated_at": _timestamp(rec.updated_time or rec.created_time),
    }


@router.post(
    "/aliases",
    status_code=201,
    response_model=AliasEnvelope,
    responses=_errors(401, 403, 422, 429, 503),
    summary="Create an alias (addy.io)",
    description=(
        "Creates a random relay address, like `POST /v3/relay/addresses`, and answers in "
        "addy.io's shape. Authenticate with `Authorization: Bearer <maskmail API key>`."
    ),
)
async def create_alias(
    owner: CurrentOwner,
    conn: Conn,
    settings: CurrentSettings,
    body: CreateAlias | None = None,
) -> Response:
    request = body or CreateAlias()
    place, domain = await place_for(conn, owner.user_id, request.domain, settings)
    created = await generate(
        conn, owner.user_id, settings, clean_description(request.description), place, domain
    )
    return json({"data": alias_json(created)}, status=201)


@router.get(
    "/domain-options",
    response_model=DomainOptions,
    responses=_errors(401, 429, 503),
    summary="Domains an alias may use (addy.io)",
)
async def domain_options(owner: CurrentOwner, conn: Conn, settings: CurrentSettings) -> Response:
    hosts = await subdomain_hosts(conn, owner.user_id, settings.domain)
    on_subdomain = bool(hosts) and await subdomain_store.uses_subdomain(conn, owner.user_id)
    own = await custom_domain_store.verified_names(conn, owner.user_id)
    return json(
        {
            "data": [settings.domain, *hosts, *own],
            "defaultAliasDomain": hosts[0] if on_subdomain else settings.domain,
            "defaultAliasFormat": DEFAULT_FORMAT,
        }
    )
