"""The mailboxes page: add (verification mailed as by the API), verify by code, make
default, delete; each one's PGP key is set in pages/mailbox_keys.py. An address's own
page chooses the mailboxes it forwards to."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from fastapi import APIRouter, Request
from starlette.responses import Response

from maskmail.config import Settings
from maskmail.core.errors import MailboxNotFound
from maskmail.http_shared.connection import Conn
from maskmail.http_shared.public_url import verify_link_maker
from maskmail.services.mailboxes import add_and_ask, check_code
from maskmail.store import mailbox_keys
from maskmail.store import mailboxes as store
from maskmail.store.mailboxes import Mailbox
from maskmail.web.error_pages import PageRoute
from maskmail.web.guard import (
    PageNotFound,
    Refused,
    attempt,
    change,
    path_id,
    plain_text,
    require_viewer,
)
from maskmail.web.render import ask_to_delete, back_to, page
from maskmail.web.sessions import Viewer

router = APIRouter(include_in_schema=False, route_class=PageRoute)

_GONE = (
    "Mail stops going to it. Addresses that forwarded only to it forward to your default "
    "mailbox instead."
)


async def mailboxes_page(
    request: Request,
    conn: Conn,
    viewer: Viewer,
    *,
    notice: str = "",
    refused: Refused | None = None,
    email: str = "",
) -> Response:
    return page(
        request,
        "mailboxes.html",
        viewer,
        status=refused.status if refused else 200,
        mailboxes=await store.list_mailboxes(conn, viewer.user_id),
        keys=await mailbox_keys.keys_of(conn, viewer.user_id),
        notice=notice,
        error=refused.message if refused else "",
        email=email,
    )


@router.get("/mailboxes")
async def show_mailboxes(request: Request, conn: Conn) -> Response:
    viewer = await require_viewer(request, conn)
    return await mailboxes_page(request, conn, viewer)


@router.post("/mailboxes")
async def add_mailbox(request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)
    email = plain_text(form.get("email"), 320)
    settings: Settings = request.app.state.settings
    added = await attempt(
        conn,
        viewer,
        lambda: add_and_ask(
            conn,
            settings,
            viewer.user_id,
            email,
            sender=request.app.state.outbound,
            link_for=verify_link_maker(request),
        ),
    )
    if isinstance(added, Refused):
        return await mailboxes_page(request, conn, viewer, refused=added, email=email)
    notice = f"A message with a link and a 6-digit code went to {added.email}."
    return await mailboxes_page(request, conn, viewer, notice=notice)


@router.post("/mailboxes/{mailbox}/verify")
async def verify_mailbox(mailbox: str, request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)
    wanted, code = path_id(mailbox, viewer), plain_text(form.get("code"), 16)
    done = await attempt(
        conn,
        viewer,
        lambda: check_code(
            conn, viewer.user_id, wanted, code, limiter=request.app.state.code_limiter
        ),
    )
    if isinstance(done, Refused):
        return await mailboxes_page(request, conn, viewer, refused=done)
    return await mailboxes_page(request, conn, viewer, notice=f"{done.email} is verified.")


async def _then_list(
    request: Request, conn: Conn, mailbox: str, work: Callable[[int, int], Awaitable[object]]
) -> Response:
    """Run ``work(user_id, mailbox_id)``, then show the list, with the refusal if any."""
    viewer, _ = await change(request, conn)
    wanted = path_id(mailbox, viewer)
    done = await attempt(conn, viewer, lambda: work(viewer.user_id, wanted))
    if isinstance(done, Refused):
        return await mailboxes_page(request, conn, viewer, refused=done)
    return back_to(request, "/mailboxes")


@router.post("/mailboxes/{mailbox}/default")
async def make_default(mailbox: str, request: Request, conn: Conn) -> Response:
    return await _then_list(request, conn, mailbox, partial(store.set_default, conn))


async def _owned(conn: Conn, viewer: Viewer, text: str) -> Mailbox:
    try:
        return await store.get_mailbox(conn, viewer.user_id, path_id(text, viewer))
    except MailboxNotFound as exc:
        raise PageNotFound(viewer) from exc


@router.get("/mailboxes/{mailbox}/delete")
async def confirm_delete(mailbox: str, request: Request, conn: Conn) -> Response:
    viewer = await require_viewer(request, conn)
    found = await _owned(conn, viewer, mailbox)
    path = f"/mailboxes/{found.id}"
    return ask_to_delete(request, viewer, "the mailbox", found.email, _GONE, path, "/mailboxes")


@router.post("/mailboxes/{mailbox}/delete")
async def delete_mailbox(mailbox: str, request: Request, conn: Conn) -> Response:
    return await _then_list(request, conn, mailbox, partial(store.delete_mailbox, conn))
