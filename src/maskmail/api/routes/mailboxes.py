"""/v3/relay/mailboxes: the real mailboxes a user reads mail in, and which of them each
address forwards to."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from maskmail.api.deps import CurrentOwner
from maskmail.api.docs import errors_for
from maskmail.api.routes.shared import AddressId, json
from maskmail.api.schemas import StorableStr
from maskmail.config import Settings
from maskmail.core.errors import InvalidAddress
from maskmail.core.records import MAX_ID
from maskmail.http_shared.connection import Conn
from maskmail.http_shared.public_url import verify_link_maker
from maskmail.openpgp import MAX_KEY_CHARS
from maskmail.services.mailbox_keys import put_key
from maskmail.services.mailboxes import add_and_ask, check_code
from maskmail.store import addresses, bounces, mailbox_keys
from maskmail.store import mailboxes as store

router = APIRouter(prefix="/v3/relay", tags=["mailboxes"])

MailboxId = Annotated[int, Path(ge=1, le=MAX_ID, description="The mailbox's id.")]


class MailboxRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    email: StorableStr = Field(max_length=320, json_schema_extra={"format": "email"})


class MailboxUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    default: bool | None = Field(
        default=None, description="`true` makes this verified mailbox the default."
    )
    paused: bool | None = Field(
        default=None,
        description="`false` resumes forwarding to a mailbox that hard bounces paused.",
    )


class CodeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    code: StorableStr = Field(max_length=16, description="The 6-digit code from the message.")


class MailboxChoice(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    mailbox_ids: list[Annotated[int, Field(ge=1, le=MAX_ID)]] = Field(min_length=1, max_length=100)


class KeyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    public_key: StorableStr = Field(
        max_length=MAX_KEY_CHARS,
        description="One ASCII-armored OpenPGP public key block that can encrypt now.",
    )
    encrypt_subject: bool | None = Field(
        default=None, description="Omitted: kept as it was (off for a first key)."
    )


class KeyUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    encrypt_subject: bool = Field(
        description="`true`: the subject travels encrypted, the outer one reads `...`."
    )


class KeyOut(BaseModel):
    mailbox_id: int
    fingerprint: str
    encrypt_subject: bool
    created_time: int = Field(description="Unix seconds, UTC: when the key was set.")
    expires_time: int | None = Field(description="Unix seconds, UTC; null: never.")


class MailboxOut(BaseModel):
    id: int
    email: str
    verified: bool
    default: bool
    created_time: int = Field(description="Unix seconds, UTC.")


@router.get(
    "/mailboxes",
    response_model=list[MailboxOut],
    responses=errors_for(401, 429, 503),
    summary="List your mailboxes, oldest first",
)
async def list_mailboxes(owner: CurrentOwner, conn: Conn) -> Response:
    return json([m.json() for m in await store.list_mailboxes(conn, owner.user_id)])


@router.post(
    "/mailboxes",
    response_model=MailboxOut,
    responses=errors_for(401, 403, 413, 422, 429, 503),
    summary="Add a mailbox; a message with a link and a code goes to it",
)
async def add_mailbox(
    body: MailboxRequest, owner: CurrentOwner, conn: Conn, request: Request
) -> Response:
    added = await add_and_ask(
        conn,
        request.app.state.settings,
        owner.user_id,
        body.email,
        sender=request.app.state.outbound,
        link_for=verify_link_maker(request),
    )
    return json(added.json())


@router.post(
    "/mailboxes/{mailbox_id:int}/verify",
    response_model=MailboxOut,
    responses=errors_for(401, 404, 422, 429, 503),
    summary="Verify a mailbox by the code mailed to it",
    description="Each attempt counts, per mailbox address (deleting and adding it again "
    "included): more than five an hour answer 429.",
)
async def verify_mailbox_code(
    mailbox_id: MailboxId, body: CodeRequest, owner: CurrentOwner, conn: Conn, request: Request
) -> Response:
    limiter = request.app.state.code_limiter
    done = await check_code(conn, owner.user_id, mailbox_id, body.code, limiter=limiter)
    return json(done.json())


@router.patch(
    "/mailboxes/{mailbox_id:int}",
    response_model=MailboxOut,
    responses=errors_for(401, 404, 413, 422, 429, 503),
    summary="Make a verified mailbox the default, or resume a paused one",
)
async def update_mailbox(
    mailbox_id: MailboxId, body: MailboxUpdate, owner: CurrentOwner, conn: Conn
) -> Response:
    if body.default is False:
        raise InvalidAddress("make another mailbox the default instead", {"field": "default"})
    if body.paused is True:
        raise InvalidAddress("only bounces pause a mailbox", {"field": "paused"})
    if body.paused is False:
        await bounces.resume_mailbox(conn, owner.user_id, mailbox_id)
    if body.default:
        await store.set_default(conn, owner.user_id, mailbox_id)
    return json((await store.get_mailbox(conn, owner.user_id, mailbox_id)).json())


@router.delete(
    "/mailboxes/{mailbox_id:int}",
    status_code=204,
    responses=errors_for(401, 404, 422, 429, 503),
    summary="Delete a mailbox that is not the default",
    description="Addresses that forwarded only to it forward to the default mailbox.",
)
async def delete_mailbox(mailbox_id: MailboxId, owner: CurrentOwner, conn: Conn) -> Response:
    await store.delete_mailbox(conn, owner.user_id, mailbox_id)
    return Response(status_code=204)


@router.get(
    "/addresses/{address_id:int}/mailboxes",
    response_model=MailboxChoice,
    responses=errors_for(401, 404, 429, 503),
    summary="The mailboxes an address forwards to",
)
async def read_address_mailboxes(
    address_id: AddressId, owner: CurrentOwner, conn: Conn
) -> Response:
    await addresses.get_address(conn, owner.user_id, address_id)
    ids = await store.address_mailbox_ids(conn, owner.user_id, address_id)
    return json({"mailbox_ids": ids})


@router.put(
    "/addresses/{address_id:int}/mailboxes",
    response_model=MailboxChoice,
    responses=errors_for(401, 404, 413, 422, 429, 503),
    summary="Choose the mailboxes an address forwards to: your verified ones, at least one",
)
async def set_address_mailboxes(
    address_id: AddressId, body: MailboxChoice, owner: CurrentOwner, conn: Conn
) -> Response:
    await addresses.get_address(conn, owner.user_id, address_id)
    ids = await store.set_address_mailboxes(conn, owner.user_id, address_id, body.mailbox_ids)
    return json({"mailbox_ids": ids})


@router.get(
    "/mailboxes/{mailbox_id:int}/pgp",
    response_model=KeyOut,
    responses=errors_for(401, 404, 429, 503),
    summary="The OpenPGP key forwards to this mailbox are encrypted to",
)
async def read_mailbox_key(mailbox_id: MailboxId, owner: CurrentOwner, conn: Conn) -> Response:
    return json((await mailbox_keys.get_key(conn, owner.user_id, mailbox_id)).json())


@router.put(
    "/mailboxes/{mailbox_id:int}/pgp",
    response_model=KeyOut,
    responses=errors_for(401, 404, 413, 422, 429, 503),
    summary="Encrypt forwards to this mailbox to an OpenPGP key (replacing any it had)",
    description="The key must parse, be able to encrypt and not be expired or revoked; "
    "otherwise 422, with the reason in `details.reason`.",
)
async def set_mailbox_key(
    mailbox_id: MailboxId, body: KeyRequest, owner: CurrentOwner, conn: Conn, request: Request
) -> Response:
    settings: Settings = request.app.state.settings
    key = await put_key(
        conn, owner.user_id, mailbox_id, body.public_key, body.encrypt_subject, settings
    )
    return json(key.json())


@router.patch(
    "/mailboxes/{mailbox_id:int}/pgp",
    response_model=KeyOut,
    responses=errors_for(401, 404, 413, 422, 429, 503),
    summary="Turn the encrypted subject on or off",
)
async def update_mailbox_key(
    mailbox_id: MailboxId, body: KeyUpdate, owner: CurrentOwner, conn: Conn
) -> Response:
    key = await mailbox_keys.set_encrypt_subject(
        conn, owner.user_id, mailbox_id, body.encrypt_subject
    )
    return json(key.json())


@router.delete(
    "/mailboxes/{mailbox_id:int}/pgp",
    status_code=204,
    responses=errors_for(401, 404, 429, 503),
    summary="Remove the key: forwards to this mailbox go unencrypted again",
)
async def delete_mailbox_key(mailbox_id: MailboxId, owner: CurrentOwner, conn: Conn) -> Response:
    await mailbox_keys.delete_key(conn, owner.user_id, mailbox_id)
    return Response(status_code=204)
