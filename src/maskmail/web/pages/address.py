"""One address: its activity, "Write to a new contact" (the contacts route's rules), and
the mailboxes it forwards to (the mailboxes route's)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from maskmail.config import Settings
from maskmail.core.errors import InvalidAddress
from maskmail.core.records import RelayAddress
from maskmail.http_shared.connection import Conn
from maskmail.services.contacts import checked_contact, contact_alias
from maskmail.store import activity, mailboxes
from maskmail.web import chart
from maskmail.web.error_pages import PageRoute
from maskmail.web.guard import Refused, attempt, change, owned_address, require_viewer
from maskmail.web.render import page
from maskmail.web.sessions import Viewer

router = APIRouter(include_in_schema=False, route_class=PageRoute)


async def _detail(
    request: Request,
    conn: Conn,
    viewer: Viewer,
    found: RelayAddress,
    *,
    contact: str = "",
    contact_email: str = "",
    error: str = "",
    mailbox_error: str = "",
    notice: str = "",
    status: int = 200,
) -> Response:
    days = await activity.last_days(conn, viewer.user_id, address_id=found.id)
    chosen = await mailboxes.address_mailbox_ids(conn, viewer.user_id, found.id)
    return page(
        request,
        "address.html",
        viewer,
        status=status,
        a=found,
        chart=chart.svg(days, f"Activity of {found.full_address}"),
        totals=chart.totals(days),
        days=days,
        contact=contact,
        contact_email=contact_email,
        error=error,
        mailbox_error=mailbox_error,
        notice=notice,
        mailboxes=await mailboxes.list_mailboxes(conn, viewer.user_id),
        chosen=set(chosen),
    )


@router.get("/addresses/{address}")
async def show_address(address: str, request: Request, conn: Conn) -> Response:
    viewer = await require_viewer(request, conn)
    found = await owned_address(conn, viewer, address)
    return await _detail(request, conn, viewer, found)


@router.post("/addresses/{address}/contacts")
async def add_contact(address: str, request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)
    found = await owned_address(conn, viewer, address)
    settings: Settings = request.app.state.settings
    email = str(form.get("email") or "")[:320]
    try:
        outside = await checked_contact(conn, email, settings)
    except InvalidAddress as exc:
        return await _detail(
            request, conn, viewer, found, contact_email=email, error=exc.message, status=422
        )
    alias = await contact_alias(conn, found.id, outside, settings)
    return await _detail(request, conn, viewer, found, contact=alias.full_address)


def _ids(values: list[str]) -> list[int]:
    """The ticked boxes; a value that is no id names no mailbox (0), which the store
    refuses as it refuses another user's."""
    return [int(v) if v.isascii() and v.isdigit() and len(v) < 19 else 0 for v in values]


@router.post("/addresses/{address}/mailboxes")
async def choose_mailboxes(address: str, request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)
    found = await owned_address(conn, viewer, address)
    wanted = _ids([str(v) for v in form.getlist("mailbox")])
    done = await attempt(
        conn,
        viewer,
        lambda: mailboxes.set_address_mailboxes(conn, viewer.user_id, found.id, wanted),
    )
    if isinstance(done, Refused):
        return await _detail(
            request, conn, viewer, found, mailbox_error=done.message, status=done.status
        )
    return await _detail(request, conn, viewer, found, notice="Mailboxes saved.")
