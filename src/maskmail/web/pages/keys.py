"""The API keys page: list by prefix, create (shown once), revoke."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from maskmail.config import Settings
from maskmail.http_shared.connection import Conn
from maskmail.http_shared.public_url import server_url
from maskmail.store import accounts
from maskmail.web.error_pages import PageRoute
from maskmail.web.guard import PageNotFound, change, path_id, require_viewer
from maskmail.web.render import back_to, page
from maskmail.web.sessions import Viewer

router = APIRouter(include_in_schema=False, route_class=PageRoute)


async def _keys_page(request: Request, conn: Conn, viewer: Viewer, new_key: str = "") -> Response:
    keys = await accounts.live_keys(conn, viewer.user_id)
    settings: Settings = request.app.state.settings
    return page(
        request,
        "keys.html",
        viewer,
        keys=keys,
        new_key=new_key,
        domain=settings.domain,
        server=server_url(request),
    )


@router.get("/keys")
async def show_keys(request: Request, conn: Conn) -> Response:
    viewer = await require_viewer(request, conn)
    return await _keys_page(request, conn, viewer)


@router.post("/keys")
async def create_key(request: Request, conn: Conn) -> Response:
    viewer, _ = await change(request, conn)
    # Rendered, not redirected to: the key exists only in this one response.
    return await _keys_page(request, conn, viewer, await accounts.create_key(conn, viewer.user_id))


@router.post("/keys/{key}/revoke")
async def revoke_key(key: str, request: Request, conn: Conn) -> Response:
    viewer, _ = await change(request, conn)
    if not await accounts.revoke_own_key(conn, viewer.user_id, path_id(key, viewer)):
        raise PageNotFound(viewer)
    return back_to(request, "/keys")
