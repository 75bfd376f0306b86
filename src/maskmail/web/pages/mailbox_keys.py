"""A verified mailbox's OpenPGP key on the mailboxes page: set or replace it (checked as
PUT /v3/relay/mailboxes/{id}/pgp checks it), remove it, encrypt the subject."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Request
from starlette.datastructures import FormData
from starlette.responses import Response

from maskmail.config import Settings
from maskmail.core.errors import InvalidAddress
from maskmail.core.text import unstorable
from maskmail.http_shared.connection import Conn
from maskmail.openpgp import MAX_KEY_CHARS
from maskmail.services.mailbox_keys import put_key
from maskmail.store import mailbox_keys as store
from maskmail.store.mailbox_keys import MailboxKey
from maskmail.web.error_pages import PageRoute
from maskmail.web.guard import Refused, attempt, change, path_id, switch
from maskmail.web.pages.mailboxes import mailboxes_page
from maskmail.web.render import back_to

router = APIRouter(include_in_schema=False, route_class=PageRoute)

Work = Callable[[int, int, FormData], Awaitable[object]]


def _armored(form: FormData) -> str:
    """The pasted key as typed; one past the limit still reads as too long."""
    text = form.get("public_key")
    text = text[: MAX_KEY_CHARS + 1] if isinstance(text, str) else ""
    problem = unstorable(text)
    if problem is not None:
        raise InvalidAddress(f"the key {problem}", {"field": "public_key"})
    return text


async def _then_list(request: Request, conn: Conn, mailbox: str, work: Work) -> Response:
    """Run ``work(user_id, mailbox_id, form)``, then show the mailboxes, with the
    refusal (the reason a key is refused) if any."""
    viewer, form = await change(request, conn)
    wanted = path_id(mailbox, viewer)
    done = await attempt(conn, viewer, lambda: work(viewer.user_id, wanted, form))
    if isinstance(done, Refused):
        return await mailboxes_page(request, conn, viewer, refused=done)
    return back_to(request, f"/mailboxes#key-{wanted}")


@router.post("/mailboxes/{mailbox}/pgp")
async def set_key(mailbox: str, request: Request, conn: Conn) -> Response:
    settings: Settings = request.app.state.settings

    async def work(user_id: int, mailbox_id: int, form: FormData) -> MailboxKey:
        return await put_key(conn, user_id, mailbox_id, _armored(form), None, settings)

    return await _then_list(request, conn, mailbox, work)


@router.post("/mailboxes/{mailbox}/pgp/subject")
async def encrypt_subject(mailbox: str, request: Request, conn: Conn) -> Response:
    async def work(user_id: int, mailbox_id: int, form: FormData) -> MailboxKey:
        on = switch(form, "encrypt_subject")
        return await store.set_encrypt_subject(conn, user_id, mailbox_id, on)

    return await _then_list(request, conn, mailbox, work)


@router.post("/mailboxes/{mailbox}/pgp/delete")
async def remove_key(mailbox: str, request: Request, conn: Conn) -> Response:
    async def work(user_id: int, mailbox_id: int, form: FormData) -> None:
        await store.delete_key(conn, user_id, mailbox_id)

    return await _then_list(request, conn, mailbox, work)
