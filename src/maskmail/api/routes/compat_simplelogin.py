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
from maskmail.api.deps import Conn, CurrentSettings, RawKeyOwner
from maskmail.api.docs import RAW_KEY_SCHEME
from maskmail.api.errors import Problem
from maskmail.api.routes.shared import generate, json
from maskmail.api.schemas import NO_NUL, StorableStr
from maskmail.core.descriptions import clean_description
from maskmail.core.records import RelayAddress
from maskmail.store import accounts

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

    note: StorableStr | None = Field(
        default=None,
        pattern=NO_NUL,
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
        StorableStr | None,
        Query(pattern=NO_NUL, description="The site the alias is for; used when there is no note."),
    ] = None,
    mode: Annotated[
        str | None, Query(description="`word` or `uuid` in SimpleLogin; ignored here.")
    ] = None,
    body: RandomAliasRequest | None = None,
) -> Response:
    note = body.note if body is not None else None
    created = await generate(conn, owner.user_id, settings, clean_description(note or hostname))
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
