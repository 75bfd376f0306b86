"""The admin page's invitations (``/admin/invitations``): make a single-use sign-up link
(shown once, and mailed when "Send it to" names an address), list them with their state,
revoke one. The workflow is ``services/invitations.py``'s (``invitation_mail.py``'s for
the mail), with an audit row each (``services/admin.py``)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from maskmail.core.invitations import InvitationNotFound
from maskmail.http_shared.connection import Conn
from maskmail.http_shared.public_url import server_url
from maskmail.services import admin
from maskmail.services.invitation_mail import Mailing
from maskmail.store.clock import now
from maskmail.web.guard import PageNotFound, Refused, attempt, path_id, plain_text
from maskmail.web.pages.admin import Admin, AdminRoute, admin_change, require_admin
from maskmail.web.render import back_to, page

router = APIRouter(include_in_schema=False, route_class=AdminRoute)


async def _page(
    request: Request,
    conn: Conn,
    who: Admin,
    *,
    link: str = "",
    error: str = "",
    expires: str = "7d",
    email: str = "",
    mailed: bool = False,
    status: int = 200,
) -> Response:
    return page(
        request,
        "admin_invitations.html",
        who.viewer,
        invitations=await admin.list_invitations(conn),
        now=now(),
        link=link,
        error=error,
        expires=expires,
        email=email,
        mailed=mailed,
        status=status,
        admin_section="invitations",
    )


@router.get("/admin/invitations")
async def show_invitations(request: Request, conn: Conn) -> Response:
    return await _page(request, conn, await require_admin(request, conn))


@router.post("/admin/invitations")
async def make_invitation(request: Request, conn: Conn) -> Response:
    who, form = await admin_change(request, conn)
    expires = plain_text(form.get("expires"), 16) or "7d"
    email = plain_text(form.get("email"), 320)
    base_url = server_url(request)
    mailing = None
    if email:
        settings = request.app.state.settings
        mailing = Mailing(email, settings, request.app.state.outbound, base_url)
    made = await attempt(
        conn, who.viewer, lambda: admin.make_invitation(conn, who.actor, expires, mailing)
    )
    if isinstance(made, Refused):
        return await _page(
            request,
            conn,
            who,
            error=made.message,
            expires=expires,
            email=email,
            status=made.status,
        )
    # Rendered, not redirected to: the link exists only in this one response.
    return await _page(request, conn, who, link=made.link(base_url), mailed=bool(email))


@router.post("/admin/invitations/{invitation_id}/revoke")
async def revoke_invitation(invitation_id: str, request: Request, conn: Conn) -> Response:
    who, _ = await admin_change(request, conn)
    found = path_id(invitation_id, who.viewer)
    try:
        await admin.revoke_invitation(conn, who.actor, found)
    except InvitationNotFound as exc:
        raise PageNotFound(who.viewer) from exc
    return back_to(request, "/admin/invitations")
