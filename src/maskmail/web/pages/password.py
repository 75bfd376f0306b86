"""Changing one's password, which signs out every other session."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from maskmail.core import passwords
from maskmail.http_shared.connection import Conn
from maskmail.services import accounts
from maskmail.store import sessions
from maskmail.web import throttle
from maskmail.web.error_pages import PageRoute
from maskmail.web.guard import change, require_viewer
from maskmail.web.render import page

router = APIRouter(include_in_schema=False, route_class=PageRoute)


@router.get("/password")
async def show_password(request: Request, conn: Conn) -> Response:
    viewer = await require_viewer(request, conn)
    return page(request, "password.html", viewer)


@router.post("/password")
async def change_password(request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)
    current, new, again = (str(form.get(name) or "") for name in ("current", "new", "again"))
    account = await sessions.account_for_user(conn, viewer.user_id)
    # The sign-in throttle: a stolen session must not become a way to guess the password.
    attempt = throttle.attempt(request, account.email)
    if await attempt.refused():
        return page(request, "password.html", viewer, error=throttle.TOO_MANY, status=429)
    error = ""
    if not await attempt.verify(account.password_hash, current):
        error = "The current password is wrong."
    elif new != again:
        error = "The two new passwords differ."
    else:
        try:
            await accounts.set_password(conn, viewer.user_id, new, keep=viewer.token_hash)
        except passwords.WeakPassword as exc:
            error = exc.message.capitalize() + "."
    status = 422 if error else 200
    return page(request, "password.html", viewer, error=error, done=not error, status=status)
