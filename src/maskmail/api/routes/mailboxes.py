"""/v3/relay/mailboxes: the real mailboxes a user reads mail in, and which of them each
address forwards to."""

from __future__ import annotations

import asyncio
import html
import time
from typing import Annotated, Protocol
from urllib.parse import urlencode

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.responses import HTMLResponse, Response

from maskmail.api.deps import Conn, CurrentOwner, client_host
from maskmail.api.docs import errors_for, page_errors_for
from maskmail.api.forwarded import from_trusted_proxy
from maskmail.api.routes.shared import AddressId, json
from maskmail.api.schemas import StorableStr
from maskmail.api.urls import public_url
from maskmail.config import Settings
from maskmail.core import mailboxes as rules
from maskmail.core.errors import DeliveryDeferred, InvalidAddress, RateLimited, ToolUnavailable
from maskmail.core.windows import in_words
from maskmail.openpgp import MAX_KEY_CHARS, check_key
from maskmail.store import addresses, bounces, domains, mailbox_keys
from maskmail.store import mailboxes as store
from maskmail.store.mailbox_keys import MailboxKey
from maskmail.store.mailboxes import Mailbox

router = APIRouter(prefix="/v3/relay", tags=["mailboxes"])

# The link's page and its button: whoever reads the mailbox has the token, not a key.
NO_KEY: dict[str, object] = {"security": []}

MailboxId = Annotated[int, Path(ge=1, le=2**63 - 1, description="The mailbox's id.")]


class Sender(Protocol):
    """The outbound path (smarthost or Maildir outbox) the entry point hands the app."""

    async def deliver(self, message: bytes, *, sender: str, recipient: str) -> None: ...

    async def close(self) -> None: ...


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

    mailbox_ids: list[Annotated[int, Field(ge=1, le=2**63 - 1)]] = Field(
        min_length=1, max_length=100
    )


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
    return json((await add_and_ask(request, conn, owner.user_id, body.email)).json())


async def add_and_ask(request: Request, conn: AsyncConnection, user_id: int, email: str) -> Mailbox:
    """Add an unverified mailbox and mail it the link and the code: the API's and the
    dashboard's way to add one."""
    settings: Settings = request.app.state.settings
    email = rules.new_mailbox(email, {settings.domain.lower()})
    # The domains of addresses made before MASKMAIL_DOMAIN changed are the relay's too.
    if await domains.receives_for(conn, email.rpartition("@")[2]):
        raise rules.at_relay_domain()
    proof = rules.new_proof()
    mails = rules.MailLimits(settings.mailbox_verify_per_address, settings.mailbox_verify_per_user)
    mailbox = await store.add_mailbox(
        conn, user_id, email, proof, limit=settings.max_mailboxes_per_user, mails=mails
    )
    link = _verify_link(request, settings, proof.token)
    message = rules.verification_message(
        to=email,
        sender=f"mailboxes@{settings.domain}",
        link=link,
        code=proof.code,
        when=time.time(),
    )
    # Inside the transaction: a message the outbound path refuses adds no mailbox.
    sender: Sender | None = request.app.state.outbound
    if sender is None:
        raise DeliveryDeferred("this server has no outbound path for verification mail")
    await sender.deliver(message, sender="", recipient=email)
    return mailbox


def _verify_link(request: Request, settings: Settings, token: str) -> str:
    """The link as the owner will open it: through the trusted proxy, if any, as the
    paging links are (``api/urls.py``)."""
    trusted = from_trusted_proxy(request.scope, settings)
    path = request.url_for("show_verify_page").path
    url = public_url(request, trusted).replace(path=path, query=urlencode({"token": token}))
    return str(url)


@router.get(
    "/mailboxes/verify",
    response_class=HTMLResponse,
    # 422: no token, or one longer than any this server makes.
    responses={200: {"content": {"text/html": {}}}, **page_errors_for(422, 429, 503)},
    openapi_extra=NO_KEY,
    summary="The page the mailed link opens: a button that verifies (no key needed)",
    description="Opening the link changes nothing, so that a mail scanner that follows "
    "links does not verify the mailbox; the page's button posts the token.",
)
async def show_verify_page(
    request: Request, token: Annotated[str, Query(max_length=128)]
) -> Response:
    await request.app.state.limiter.hit(f"anon:{client_host(request)}")
    action = "verify?" + urlencode({"token": token})
    return _page(_ASK.format(action=html.escape(action, quote=True)))


@router.post(
    "/mailboxes/verify",
    response_class=HTMLResponse,
    responses={200: {"content": {"text/html": {}}}, **page_errors_for(404, 422, 429, 503)},
    openapi_extra=NO_KEY,
    summary="Verify a mailbox by the token of the mailed link (no key needed)",
    description="What the link's page's button posts, to the link's own address; a used, "
    "expired or unknown token is a 404.",
)
async def verify_mailbox_link(
    request: Request, conn: Conn, token: Annotated[str, Query(max_length=128)]
) -> Response:
    await request.app.state.limiter.hit(f"anon:{client_host(request)}")
    mailbox = await store.verify_by_token(conn, rules.digest(token))
    return _page(_DONE.format(email=html.escape(mailbox.email)))


_ASK = (
    "<h1>Verify this mailbox</h1>"
    "<p>Someone added this mailbox to their maskmail account. If you expect mail from it, "
    "verify the mailbox; otherwise close this page.</p>"
    # The token rides in the action's query: API bodies are JSON, and a form sends none.
    '<form method="post" action="{action}">'
    '<button type="submit">Verify this mailbox</button></form>'
)
_DONE = "<h1>Verified</h1><p>{email} is verified. You may close this page.</p>"


def _page(body: str) -> Response:
    """A plain page, kept out of caches and, with the token in its address, out of
    Referer headers."""
    return HTMLResponse(
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="robots" content="noindex">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>maskmail: verify a mailbox</title></head><body>{body}</body></html>",
        headers={"Cache-Control": "no-store"},
    )


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
    return json((await check_code(request, conn, owner.user_id, mailbox_id, body.code)).json())


async def check_code(
    request: Request, conn: AsyncConnection, user_id: int, mailbox_id: int, code: str
) -> Mailbox:
    """Verify by the code, each attempt counted (the API's and the dashboard's way)."""
    mailbox = await store.get_mailbox(conn, user_id, mailbox_id)
    # Per owner and address, not per row: deleting and re-adding the mailbox gives no
    # new tries, and nobody else can use up the owner's.
    key = rules.address_key(mailbox.email)
    try:
        await request.app.state.code_limiter.hit(f"mailbox:{user_id}:{key}")
    except RateLimited as exc:
        wait = in_words(exc.retry_after)
        raise RateLimited(
            f"five codes were tried for this mailbox within an hour; try again in {wait}",
            exc.retry_after,
        ) from exc
    return await store.verify_by_code(conn, user_id, mailbox_id, rules.digest(code))


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


async def put_key(
    conn: AsyncConnection,
    user_id: int,
    mailbox_id: int,
    armored: str,
    encrypt_subject: bool | None,
    settings: Settings,
) -> MailboxKey:
    """Check the key and keep it (the API's and the dashboard's way)."""
    await store.get_mailbox(conn, user_id, mailbox_id)
    # In a thread, so that MASKMAIL_PGP_TIMEOUT can give up on it.
    try:
        facts = await asyncio.wait_for(asyncio.to_thread(check_key, armored), settings.pgp_timeout)
    except TimeoutError:
        # Not chained: a TimeoutError behind an error reads as a database outage.
        raise ToolUnavailable("the key could not be checked in time; try again") from None
    return await mailbox_keys.set_key(
        conn, user_id, mailbox_id, armored.strip(), facts, encrypt_subject
    )


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
