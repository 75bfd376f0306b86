"""The admin page (``/admin``): users with their counts, one user's state and limits,
deleting a user, and the audit log.

Only admins see it. To anyone else signed in, every path under ``/admin`` answers as
an unknown path does (the app's own 404, not the dashboard's), so it does not tell that
it exists; signed out, it is the sign-in page, as every dashboard page is. A change
takes the admin's session, the form's token, and a request of the client's under
MASKMAIL_RATE_LIMIT; the service writes its audit row in the same transaction.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from fastapi import APIRouter, Request
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.responses import Response

from maskmail.core.errors import UserNotFound
from maskmail.http_shared.connection import Conn
from maskmail.http_shared.forwarded import client_host
from maskmail.http_shared.problems import answering_route
from maskmail.http_shared.ratelimit import Limiter
from maskmail.services import admin
from maskmail.store.accounts import UserLimits
from maskmail.store.user_overview import UserRow
from maskmail.web import csrf, error_pages
from maskmail.web.guard import PageNotFound, Refused, attempt, path_id, read_form, require_viewer
from maskmail.web.render import ask_to_delete, back_to, page
from maskmail.web.sessions import Viewer

T = TypeVar("T")


class NotAnAdmin(Exception):
    """A signed-in person who is not an admin: answered as an unknown path."""


def _answer(request: Request, exc: Exception) -> Response:
    if isinstance(exc, NotAnAdmin):
        # Raised on to the app's handlers, which answer an unknown path the same way.
        raise HTTPException(status_code=404) from None
    return error_pages.answer(request, exc)


# The route class of every admin page (web/pages/admin_invitations.py too).
AdminRoute = answering_route(_answer)
router = APIRouter(include_in_schema=False, route_class=AdminRoute)


@dataclass(frozen=True, slots=True)
class Admin:
    viewer: Viewer
    actor: admin.Actor


async def require_admin(request: Request, conn: Conn) -> Admin:
    viewer = await require_viewer(request, conn)
    if not await admin.is_admin(conn, viewer.user_id):
        raise NotAnAdmin
    return Admin(viewer, admin.Actor(viewer.user_id, viewer.email, client_host(request)))


async def admin_change(request: Request, conn: Conn) -> tuple[Admin, FormData]:
    """An admin's change: the admin first (so that no one else learns more than an
    unknown path tells), then the form's token, then the client's rate."""
    who = await require_admin(request, conn)
    form = await read_form(request)
    csrf.check(request, form, who.viewer.csrf)
    limiter: Limiter = request.app.state.limiter
    await limiter.hit(f"admin:{client_host(request)}")
    return who, form


async def _user(conn: Conn, who: Admin, text: str) -> UserRow:
    try:
        return await admin.user(conn, path_id(text, who.viewer))
    except UserNotFound as exc:
        raise PageNotFound(who.viewer) from exc


async def _attempt(conn: Conn, who: Admin, work: Callable[[], Awaitable[T]]) -> T | Refused:
    """``guard.attempt``; a user deleted meanwhile (by another admin) is the 404 page."""
    try:
        return await attempt(conn, who.viewer, work)
    except UserNotFound as exc:
        raise PageNotFound(who.viewer) from exc


@router.get("/admin")
async def show_users(request: Request, conn: Conn) -> Response:
    who = await require_admin(request, conn)
    listed = await admin.users(conn, admin.page_number(request.query_params.get("page")))
    return page(request, "admin.html", who.viewer, listed=listed, admin_section="users")


@router.get("/admin/audit")
async def show_audit(request: Request, conn: Conn) -> Response:
    who = await require_admin(request, conn)
    listed = await admin.audit(conn, admin.page_number(request.query_params.get("page")))
    return page(request, "admin_audit.html", who.viewer, listed=listed, admin_section="audit")


def _user_page(
    request: Request, who: Admin, user: UserRow, error: str = "", status: int = 200
) -> Response:
    return page(
        request,
        "admin_user.html",
        who.viewer,
        user=user,
        itself=user.id == who.viewer.user_id,
        settings=request.app.state.settings,
        error=error,
        status=status,
        admin_section="users",
    )


@router.get("/admin/users/{user_id}")
async def show_user(user_id: str, request: Request, conn: Conn) -> Response:
    who = await require_admin(request, conn)
    return _user_page(request, who, await _user(conn, who, user_id))


async def _refused_or_back(
    request: Request, conn: Conn, who: Admin, user_id: int, done: object
) -> Response:
    if isinstance(done, Refused):
        user = await _user(conn, who, str(user_id))
        return _user_page(request, who, user, done.message, done.status)
    return back_to(request, f"/admin/users/{user_id}")


async def _switch(request: Request, conn: Conn, text: str, disabled: bool) -> Response:
    who, _ = await admin_change(request, conn)
    user_id = (await _user(conn, who, text)).id
    done = await _attempt(conn, who, lambda: admin.set_disabled(conn, who.actor, user_id, disabled))
    return await _refused_or_back(request, conn, who, user_id, done)


@router.post("/admin/users/{user_id}/disable")
async def disable_user(user_id: str, request: Request, conn: Conn) -> Response:
    return await _switch(request, conn, user_id, True)


@router.post("/admin/users/{user_id}/enable")
async def enable_user(user_id: str, request: Request, conn: Conn) -> Response:
    return await _switch(request, conn, user_id, False)


@router.post("/admin/users/{user_id}/limits")
async def change_limits(user_id: str, request: Request, conn: Conn) -> Response:
    who, form = await admin_change(request, conn)
    target = (await _user(conn, who, user_id)).id

    async def work() -> UserRow:
        limits = UserLimits(
            admin.parse_limit(form.get("addresses"), "addresses", 0),
            admin.parse_limit(form.get("mailboxes"), "mailboxes", 1),
            admin.parse_limit(form.get("domains"), "domains", 0),
        )
        return await admin.set_limits(conn, who.actor, target, limits)

    return await _refused_or_back(request, conn, who, target, await _attempt(conn, who, work))


@router.get("/admin/users/{user_id}/delete")
async def ask_delete_user(user_id: str, request: Request, conn: Conn) -> Response:
    who = await require_admin(request, conn)
    user = await _user(conn, who, user_id)
    return ask_to_delete(
        request,
        who.viewer,
        "the user",
        user.email,
        f"Their {user.addresses} addresses, mailboxes, domains, keys and sessions go; "
        "no address of theirs is ever handed out again.",
        f"/admin/users/{user.id}",
        f"/admin/users/{user.id}",
    )


@router.post("/admin/users/{user_id}/delete")
async def delete_user(user_id: str, request: Request, conn: Conn) -> Response:
    who, _ = await admin_change(request, conn)
    target = (await _user(conn, who, user_id)).id
    done = await _attempt(conn, who, lambda: admin.delete_user(conn, who.actor, target))
    if isinstance(done, Refused):
        return await _refused_or_back(request, conn, who, target, done)
    return back_to(request, "/admin")
