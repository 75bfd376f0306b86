"""One address: its activity, and "Write to a new contact" (the contacts route's rules)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from maskmail.api.deps import Conn
from maskmail.api.routes.contacts import outside_contact
from maskmail.config import Settings
from maskmail.core.errors import InvalidAddress
from maskmail.core.records import RelayAddress
from maskmail.store import activity
from maskmail.store.reverse_aliases import found_or_made
from maskmail.web import chart
from maskmail.web.guard import change, owned_address, require_viewer
from maskmail.web.render import page
from maskmail.web.sessions import Viewer

router = APIRouter(include_in_schema=False)


async def _detail(
    request: Request,
    conn: Conn,
    viewer: Viewer,
    found: RelayAddress,
    *,
    contact: str = "",
    contact_email: str = "",
    error: str = "",
    status: int = 200,
) -> Response:
    days = await activity.last_days(conn, viewer.user_id, address_id=found.id)
    return page(
        request,
        "address.html",
        viewer,
        status=status,
        a=found,
        chart=chart.svg(days, f"Activity of {found.full_address}"),
        totals=chart.totals(days),
        contact=contact,
        contact_email=contact_email,
        error=error,
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
        outside = outside_contact(email, settings.domain)
    except InvalidAddress as exc:
        return await _detail(
            request, conn, viewer, found, contact_email=email, error=exc.message, status=422
        )
    alias = await found_or_made(conn, found.id, outside, domain=settings.domain)
    return await _detail(request, conn, viewer, found, contact=alias.full_address)
