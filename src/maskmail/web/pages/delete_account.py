"""Deleting one's own account: the export offered first as a download, the password
(and, with two-factor on, a code from the app or a recovery code) asked, then the operator's
deletion (services/account_deletion.py), and a page saying it is done."""

from __future__ import annotations

import json

from fastapi import APIRouter, Request
from starlette.responses import Response

from maskmail.http_shared.connection import Conn
from maskmail.services import account_deletion, two_factor
from maskmail.store import sessions
from maskmail.web import throttle
from maskmail.web.error_pages import PageRoute
from maskmail.web.guard import change, require_viewer
from maskmail.web.pages import two_factor_tries
from maskmail.web.render import HEADERS, back_to, page
from maskmail.web.sessions import Viewer, clear_cookie

router = APIRouter(include_in_schema=False, route_class=PageRoute)


async def _ask(
    request: Request, conn: Conn, viewer: Viewer, *, error: str = "", status: int = 200
) -> Response:
    second = await account_deletion.needs_second_factor(conn, viewer.user_id)
    return page(request, "delete_account.html", viewer, second=second, error=error, status=status)


@router.get("/account/delete")
async def show_delete_account(request: Request, conn: Conn) -> Response:
    return await _ask(request, conn, await require_viewer(request, conn))


@router.get("/account/export")
async def export_account(request: Request, conn: Conn) -> Response:
    """The data ``maskmail user export`` writes, as a file to keep."""
    viewer = await require_viewer(request, conn)
    data = await account_deletion.export_account(conn, viewer.user_id)
    body = json.dumps(data, indent=2, ensure_ascii=False).encode("utf-8")
    headers = {**HEADERS, "Content-Disposition": 'attachment; filename="maskmail-export.json"'}
    return Response(body, media_type="application/json", headers=headers)


@router.post("/account/delete")
async def delete_account(request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)
    account = await sessions.account_for_user(conn, viewer.user_id)
    # The sign-in throttle: a stolen session must not become a way to guess the password.
    attempt = throttle.attempt(request, account.email)
    if await attempt.refused():
        return await _ask(request, conn, viewer, error=throttle.TOO_MANY, status=429)
    if not await attempt.verify(account.password_hash, str(form.get("password") or "")):
        return await _ask(request, conn, viewer, error="The password is wrong.", status=422)
    if await account_deletion.needs_second_factor(conn, viewer.user_id):
        tries = two_factor_tries.tries(request, viewer.user_id)
        if await tries.refused():
            return await _ask(request, conn, viewer, error=two_factor_tries.TOO_MANY, status=429)
        code = str(form.get("second") or "")
        if not await two_factor.confirm_owner(conn, viewer.user_id, code, two_factor.now()):
            await tries.failed()
            error = "The code from your second factor is wrong."
            return await _ask(request, conn, viewer, error=error, status=422)
    await account_deletion.delete_account(conn, viewer.user_id)
    response = back_to(request, "/account/deleted")
    clear_cookie(request, response)
    return response


@router.get("/account/deleted")
async def show_deleted(request: Request) -> Response:
    return page(request, "account_deleted.html", None)
