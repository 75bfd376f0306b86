"""/v3/relay/keys: the caller's API keys, listed by name and prefix, and revoked.

Keys are made in the dashboard or by ``maskmail key create`` (the plaintext is shown
there once); the API lists and revokes them (services/api_keys.py).
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field
from starlette.responses import Response

from maskmail.api.deps import CurrentOwner
from maskmail.api.docs import errors_for
from maskmail.api.routes.shared import json
from maskmail.http_shared.connection import Conn
from maskmail.services import api_keys

router = APIRouter(prefix="/v3/relay/keys", tags=["API keys"])


class ApiKey(BaseModel):
    """One live API key; never the key itself, which is shown only when it is made."""

    id: int = Field(description="The key's id, for `DELETE /v3/relay/keys/{id}`.")
    name: str | None = Field(description="Its owner's name for it; null when none was given.")
    prefix: str = Field(description="The key's first characters, followed by `…` in lists.")
    created_time: int = Field(description="Unix seconds, UTC, when it was made.")
    last_used_time: int | None = Field(
        description="Unix seconds, UTC, of its last use (written at most once a minute); "
        "null when never used."
    )
    current: bool = Field(description="Whether this request was made with this key.")


@router.get(
    "",
    response_model=list[ApiKey],
    responses=errors_for(401, 429, 503),
    summary="List your API keys",
    description="The caller's live (unrevoked) keys, newest first.",
)
async def list_keys(owner: CurrentOwner, conn: Conn) -> Response:
    found = await api_keys.listed(conn, owner.user_id)
    return json(
        [
            {
                "id": key.id,
                "name": key.name,
                "prefix": key.prefix,
                "created_time": key.created_time,
                "last_used_time": key.last_used_time,
                "current": key.id == owner.key_id,
            }
            for key in found
        ]
    )


@router.delete(
    "/{key_id:int}",
    status_code=204,
    response_class=Response,
    responses=errors_for(401, 404, 429, 503),
    summary="Revoke an API key",
    description=(
        "The key stops working at once, this request's own key too. An id that is unknown, "
        "already revoked or another user's is a 404, the same either way."
    ),
)
async def revoke_key(key_id: int, owner: CurrentOwner, conn: Conn) -> Response:
    await api_keys.revoke(conn, owner.user_id, key_id)
    return Response(status_code=204)
