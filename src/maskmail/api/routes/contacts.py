"""/v3/relay/addresses/{id}/contacts: write first, from a relay address, to anyone."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from maskmail.api.deps import CurrentOwner, CurrentSettings
from maskmail.api.docs import errors_for
from maskmail.api.routes.shared import AddressId, json
from maskmail.api.schemas import NO_NUL, StorableStr
from maskmail.http_shared.connection import Conn
from maskmail.services.contacts import checked_contact, contact_alias
from maskmail.store import addresses as store

router = APIRouter(prefix="/v3/relay/addresses", tags=["relay addresses"])


class ContactRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    email: StorableStr = Field(
        max_length=320,
        pattern=NO_NUL,
        description="The outside address to write to.",
        json_schema_extra={"format": "email"},
    )


class Contact(BaseModel):
    """The reverse alias that reaches one outside address from one relay address."""

    address_id: int = Field(description="The relay address the messages come from.")
    email: str = Field(description="The outside address, in lower case.")
    reverse_alias: str = Field(
        description="Write to this address from your own mailbox; the message reaches "
        "`email` from the relay address, without your address."
    )
    created_time: int = Field(description="Unix seconds, UTC, when the alias was made.")


@router.post(
    "/{address_id:int}/contacts",
    response_model=Contact,
    responses=errors_for(401, 404, 413, 422, 429, 503),
    summary="Get the address to write to someone from this relay address",
    description=(
        "Returns the reverse alias for `email`: mail the owner sends to it from their own "
        "mailbox reaches `email` from the relay address, and replies come back through "
        "the relay address. Asking again for the same `email` returns the same alias."
    ),
)
async def add_contact(
    address_id: AddressId,
    body: ContactRequest,
    owner: CurrentOwner,
    conn: Conn,
    settings: CurrentSettings,
) -> Response:
    outside = await checked_contact(conn, body.email, settings)
    address = await store.get_address(conn, owner.user_id, address_id)
    alias = await contact_alias(conn, address.id, outside, settings)
    return json(
        {
            "address_id": address.id,
            "email": alias.sender,
            "reverse_alias": alias.full_address,
            "created_time": alias.created_time,
        }
    )
