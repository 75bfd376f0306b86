"""The API keys page: list by name and prefix, create under a name (shown once), revoke
(services/api_keys.py, as ``/v3/relay/keys`` does)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from maskmail.config import Settings
from maskmail.core.errors import InvalidAddress, KeyNotFound
from maskmail.http_shared.connection import Conn
from maskmail.http_shared.public_url import server_url
from maskmail.services import api_keys
from maskmail.web.error_pages import PageRoute
from maskmail.web.guard import PageNotFound, change, path_id, require_viewer
from maskmail.web.render import back_to, page, sentence
from maskmail.web.sessions import Viewer

router = APIRouter(include_in_schema=False, route_class=PageRoute)
# A name longer than any allowed is not read further (the form's own cap is NAME_MAX).
_READ_AT_MOST = api_keys.NAME_MAX * 4


async def _keys_page(
    request: Request,
    conn: Conn,
    viewer: Viewer,
    *,
    new_key: str = "",
    name: str = "",
    error: str = "",
) -> Response:
    settings: Settings = request.app.state.settings
    return page(
        request,
        "keys.html",
        viewer,
        status=422 if error else 200,
        keys=await api_keys.listed(conn, viewer.user_id),
        new_key=new_key,
        name=name,
        error=error,
        name_max=api_keys.NAME_MAX,
        domain=settings.domain,
        server=server_url(request),
    )


@router.get("/keys")
async def show_keys(request: Request, conn: Conn) -> Response:
    viewer = await require_viewer(request, conn)
    return await _keys_page(request, conn, viewer)


@router.post("/keys")
async def create_key(request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)
    name = str(form.get("name") or "")[:_READ_AT_MOST]
    try:
        key = await api_keys.create(conn, viewer.user_id, name)
    except InvalidAddress as exc:
        return await _keys_page(request, conn, viewer, name=name, error=sentence(exc.message))
    # Rendered, not redirected to: the key exists only in this one response.
    return await _keys_page(request, conn, viewer, new_key=key)


@router.post("/keys/{key}/revoke")
async def revoke_key(key: str, request: Request, conn: Conn) -> Response:
    viewer, _ = await change(request, conn)
    try:
        await api_keys.revoke(conn, viewer.user_id, path_id(key, viewer))
    except KeyNotFound as exc:
        raise PageNotFound(viewer) from exc
    return back_to(request, "/keys")
