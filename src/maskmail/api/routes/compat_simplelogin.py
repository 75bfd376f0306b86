"""SimpleLogin-compatible alias creation, as Bitwarden, Keyguard and its extension call it.

The key arrives as ``Authentication: <key>``. Clients read ``alias`` from a 201 and
``error`` from anything else.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from maskmail.api.contracts import contract_errors, contract_route
from maskmail.api.deps import CurrentSettings, RawKeyOwner
from maskmail.api.docs import RAW_KEY_SCHEME
from maskmail.api.routes.shared import json
from maskmail.api.schemas import NulFreeStr, StorableStr
from maskmail.core.descriptions import clean_description
from maskmail.core.errors import AddressTaken, InvalidAddress
from maskmail.core.first_mail import catch_all_local
from maskmail.core.records import RelayAddress
from maskmail.http_shared.connection import Conn
from maskmail.http_shared.problems import Problem
from maskmail.services.addresses import generate
from maskmail.store import accounts
from maskmail.store import custom_domains as custom_domain_store
from maskmail.store.addresses import Place, create_address

TAG = "compatibility: SimpleLogin"


class SimpleLoginError(BaseModel):
    """SimpleLogin's error body."""

    error: str = Field(examples=["Wrong api key"])


def render_error(found: Problem) -> dict[str, Any]:
    return {"error": found.message}


router = APIRouter(prefix="/api", tags=[TAG], route_class=contract_route(render_error))
SECURITY: dict[str, Any] = {"security": [{RAW_KEY_SCHEME: []}]}


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return contract_errors(
        SimpleLoginError,
        statuses,
        {
            401: "Missing, malformed, unknown or revoked API key in `Authentication`.",
            422: "The body is not a JSON object, or a field has the wrong type.",
        },
    )


class RandomAliasRequest(BaseModel):
    """The optional body; it may also be empty, with no Content-Type."""

    model_config = ConfigDict(extra="allow")

    note: NulFreeStr | None = Field(
        default=None,
        description="Control characters removed, cut to 64 characters.",
    )


class Alias(BaseModel):
    id: int
    email: str
    alias: str = Field(description="The same as `email`; the field clients read.")
    name: None
    note: str | None
    enabled: bool
    pinned: bool
    creation_date: str = Field(description="UTC, `YYYY-MM-DD HH:MM:SS+00:00`.")
    creation_timestamp: int = Field(description="Unix seconds, UTC.")
    nb_forward: int
    nb_block: int
    nb_reply: int
    latest_activity: None


class UserInfo(BaseModel):
    name: str
    email: str = Field(description="The mailbox this account's mail is forwarded to.")
    is_premium: bool
    in_trial: bool
    profile_picture_url: None
    can_create_reverse_alias: bool


def alias_json(rec: RelayAddress) -> dict[str, Any]:
    created = datetime.fromtimestamp(rec.created_time, UTC)
    return {
        "id": rec.id,
        "email": rec.full_address,
        "alias": rec.full_address,
        "name": None,
        "note": rec.description or None,
        "enabled": rec.enabled,
        "pinned": False,
        "creation_date": created.strftime("%Y-%m-%d %H:%M:%S+00:00"),
        "creation_timestamp": rec.created_time,
        "nb_forward": rec.num_forwarded,
        "nb_block": rec.num_blocked,
        "nb_reply": rec.num_replied,
        "latest_activity": None,
    }


@router.post(
    "/alias/random/new",
    status_code=201,
    response_model=Alias,
    responses=_errors(401, 403, 422, 429, 503),
    openapi_extra=SECURITY,
    summary="Create a random alias (SimpleLogin)",
    description=(
        "Creates a random relay address, like `POST /v3/relay/addresses`, and answers in "
        "SimpleLogin's shape. The description is `note`, or else `hostname`."
    ),
)
async def create_random_alias(
    owner: RawKeyOwner,
    conn: Conn,
    settings: CurrentSettings,
    hostname: Annotated[
        NulFreeStr | None,
        Query(description="The site the alias is for; used when there is no note."),
    ] = None,
    mode: Annotated[
        str | None, Query(description="`word` or `uuid` in SimpleLogin; ignored here.")
    ] = None,
    body: RandomAliasRequest | None = None,
) -> Response:
    note = body.note if body is not None else None
    created = await generate(conn, owner.user_id, settings, clean_description(note or hostname))
    return json(alias_json(created), status=201)


class Suffix(BaseModel):
    suffix: str = Field(examples=["@example.org"])
    signed_suffix: str = Field(description="The same as `suffix`: checked again on creation.")
    is_custom: bool
    is_premium: bool


class AliasOptions(BaseModel):
    can_create: bool
    prefix_suggestion: str
    suffixes: list[Suffix] = Field(description="The caller's verified custom domains.")


class CustomAliasRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    alias_prefix: StorableStr = Field(max_length=64, description="The local part: a-z 0-9 . _ -")
    signed_suffix: StorableStr = Field(max_length=300, examples=["@example.org"])
    note: NulFreeStr | None = None


def _suffix(suffix: str) -> dict[str, Any]:
    return {"suffix": suffix, "signed_suffix": suffix, "is_custom": True, "is_premium": False}


@router.get(
    "/v5/alias/options",
    response_model=AliasOptions,
    responses=_errors(401, 429, 503),
    openapi_extra=SECURITY,
    summary="Where a chosen alias may go (SimpleLogin)",
    description=(
        "Offers the caller's verified custom domains as suffixes; addresses on the relay's "
        "own domain are random only (`/api/alias/random/new`)."
    ),
)
async def alias_options(
    owner: RawKeyOwner,
    conn: Conn,
    hostname: Annotated[NulFreeStr | None, Query()] = None,
) -> Response:
    domains = await custom_domain_store.verified_names(conn, owner.user_id)
    suggestion = "".join(c for c in (hostname or "").lower().split(".")[0] if c.isalnum())
    return json(
        {
            "can_create": bool(domains),
            "prefix_suggestion": suggestion[:40],
            "suffixes": [
                {
                    "suffix": f"@{d}",
                    "signed_suffix": f"@{d}",
                    "is_custom": True,
                    "is_premium": False,
                }
                for d in domains
            ],
        }
    )


@router.post(
    "/v3/alias/custom/new",
    status_code=201,
    response_model=Alias,
    responses=_errors(401, 403, 422, 429, 503),
    openapi_extra=SECURITY,
    summary="Create a chosen alias on a custom domain (SimpleLogin)",
    description=(
        "`alias_prefix` + `signed_suffix` (one of `/api/v5/alias/options`' suffixes) makes "
        "that address on the caller's verified domain, by the rules of addresses made on "
        "first mail. One that exists or existed is a 422."
    ),
)
async def create_custom_alias(
    body: CustomAliasRequest, owner: RawKeyOwner, conn: Conn, settings: CurrentSettings
) -> Response:
    domain = body.signed_suffix.strip().lower().removeprefix("@")
    if not await custom_domain_store.verified_domain(conn, owner.user_id, domain):
        raise InvalidAddress("this suffix is not one of yours", {"field": "signed_suffix"})
    try:
        created = await create_address(
            conn,
            owner.user_id,
            domain=domain,
            length=settings.address_length,
            limit=settings.max_addresses_per_user,
            description=clean_description(body.note or ""),
            place=Place.DOMAIN,
            local=catch_all_local(body.alias_prefix),
        )
    except AddressTaken as exc:
        raise InvalidAddress(exc.message, {"field": "alias_prefix"}) from exc
    return json(alias_json(created), status=201)


@router.get(
    "/user_info",
    response_model=UserInfo,
    responses=_errors(401, 429, 503),
    openapi_extra=SECURITY,
    summary="The account behind the key (SimpleLogin)",
    description="Clients call it to check a key. Limits are enforced on creation instead.",
)
async def user_info(owner: RawKeyOwner, conn: Conn) -> Response:
    email = await accounts.user_email(conn, owner.user_id)
    return json(
        {
            "name": email,
            "email": email,
            "is_premium": True,
            "in_trial": False,
            "profile_picture_url": None,
            # Contacts (POST /v3/relay/addresses/{id}/contacts) are reverse aliases.
            "can_create_reverse_alias": True,
        }
    )
