"""The addresses page: list, search, create, change and delete, through the same store
functions, rules and errors as the API."""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import APIRouter, Request
from pydantic import ValidationError
from starlette.datastructures import FormData
from starlette.responses import HTMLResponse, Response

from maskmail.config import Settings
from maskmail.core.errors import AddressNotFound, LimitReached
from maskmail.core.paging import PageRequest, has_next, positive_int
from maskmail.core.records import RelayAddress
from maskmail.http_shared.connection import Conn
from maskmail.services.address_changes import AddressUpdate
from maskmail.services.addresses import generate
from maskmail.store import addresses as store
from maskmail.store.address_search import search_addresses
from maskmail.web.error_pages import PageRoute, error_page
from maskmail.web.guard import (
    PageNotFound,
    change,
    owned_address,
    path_id,
    plain_text,
    require_viewer,
    viewer_of,
)
from maskmail.web.pages.signin import sign_in_page
from maskmail.web.render import HEADERS, ask_to_delete, back_to, fragment, page, root
from maskmail.web.sessions import Viewer

router = APIRouter(include_in_schema=False, route_class=PageRoute)

_GONE = "Mail to it will no longer reach you, and the address is never handed out again."

PAGE_SIZE = 50
MAX_QUERY = 100
SWITCHES = ("enabled", "block_spam")


def _back(form: FormData) -> str:
    """Where a form without script returns to: one of our own paths, never another site."""
    back = str(form.get("back") or "/")
    # Browsers read a backslash as a slash: "/\\host" would leave the site too.
    ours = back.startswith("/") and not back.startswith("//") and "\\" not in back
    return back if ours else "/"


async def _list_page(
    request: Request,
    conn: Conn,
    viewer: Viewer,
    *,
    created: RelayAddress | None = None,
    error: str = "",
    status: int = 200,
) -> Response:
    q = plain_text(request.query_params.get("q"), MAX_QUERY)
    # The API's lenient reading of a page number: anything else is the first page.
    wanted = PageRequest(positive_int(request.query_params.get("page"), 1), PAGE_SIZE)
    number, offset = wanted.page, wanted.offset
    count, rows = await search_addresses(conn, viewer.user_id, q, offset=offset, limit=PAGE_SIZE)

    def link(n: int) -> str:
        return f"{root(request)}/?{urlencode({'q': q, 'page': n} if q else {'page': n})}"

    # The first page without a search is "/", where a form returns by default.
    here = f"/?{urlencode({'q': q, 'page': number})}" if q or number > 1 else "/"
    return page(
        request,
        "addresses.html",
        viewer,
        status=status,
        rows=rows,
        count=count,
        first=offset + 1,
        last=offset + len(rows),
        q=q,
        back=here,
        created=created,
        error=error,
        previous=link(number - 1) if number > 1 else None,
        next=link(number + 1) if has_next(wanted, count) else None,
    )


@router.get("/")
async def home(request: Request, conn: Conn) -> Response:
    """The addresses page, or the sign-in form without a session."""
    viewer = await viewer_of(request, conn)
    if viewer is None:
        return sign_in_page(request)
    created = None
    if "created" in request.query_params:
        created = await owned_address(conn, viewer, request.query_params["created"])
    return await _list_page(request, conn, viewer, created=created)


@router.post("/addresses")
async def new_address(request: Request, conn: Conn) -> Response:
    viewer, _ = await change(request, conn)
    settings: Settings = request.app.state.settings
    try:
        made = await generate(conn, viewer.user_id, settings)
    except LimitReached as exc:
        return await _list_page(request, conn, viewer, error=exc.message, status=403)
    return back_to(request, f"/?created={made.id}")


def _changes(form: FormData) -> dict[str, object]:
    """The form's fields as the API's body would carry them; AddressUpdate judges them."""
    body: dict[str, object] = {}
    if "description" in form:
        body["description"] = str(form["description"])
    for name in SWITCHES:
        if name in form:
            value = str(form[name])
            body[name] = {"true": True, "false": False}.get(value, value)
    return AddressUpdate.model_validate(body).changes()


@router.post("/addresses/{address}")
async def change_address(address: str, request: Request, conn: Conn) -> Response:
    viewer, form = await change(request, conn)
    wanted = path_id(address, viewer)
    try:
        changed = await store.update_address(conn, viewer.user_id, wanted, _changes(form))
    except AddressNotFound as exc:
        raise PageNotFound(viewer) from exc
    except ValidationError as exc:
        message = "Not saved: " + "; ".join(str(e["msg"]) for e in exc.errors())
        return error_page(request, 422, message, viewer)
    if request.headers.get("hx-request"):
        # The one-address page's switches swap themselves; a list's row swaps the row.
        alone = request.headers.get("hx-target") == "switches"
        part = fragment(
            "_switches.html" if alone else "_row.html",
            a=changed,
            base=root(request),
            csrf=viewer.csrf,
            back=_back(form),
            alone=alone,
        )
        return HTMLResponse(part, headers=HEADERS)
    return back_to(request, _back(form))


@router.get("/addresses/{address}/delete")
async def confirm_delete(address: str, request: Request, conn: Conn) -> Response:
    viewer = await require_viewer(request, conn)
    found = await owned_address(conn, viewer, address)
    path = f"/addresses/{found.id}"
    return ask_to_delete(request, viewer, "", found.full_address, _GONE, path, "/")


@router.post("/addresses/{address}/delete")
async def delete_address(address: str, request: Request, conn: Conn) -> Response:
    viewer, _ = await change(request, conn)
    try:
        await store.delete_address(conn, viewer.user_id, path_id(address, viewer))
    except AddressNotFound as exc:
        raise PageNotFound(viewer) from exc
    return back_to(request, "/")
