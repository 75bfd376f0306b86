"""A GET to an address that only a form posts to, sent to the page that holds the form.

A browser lands there by GET after a form's post: a reload, the back button, a bookmark
or a copied URL. A bare 405 tells the person nothing; a 303 to the form's page lets them
go on. The page is found from the path alone (the longest of its leading parts that is a
dashboard page, the home page at the least), before any session is read: a signed-out
visitor learns nothing new and then gets that page's own sign-in redirect. The POST
routes themselves, and their CSRF checks, are untouched. A HEAD is answered as its GET,
here as on every path (``api/head.py``): these routes take GET alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.routing import APIRoute
from starlette.responses import Response
from starlette.routing import BaseRoute

from maskmail.web.error_pages import PageRoute
from maskmail.web.render import back_to

HOME = "/"
GET = frozenset({"GET"})
# The name of the routes added here: they answer a GET, but show no page.
FORM_PAGE = "form_page"


def routes_of(router: APIRouter) -> list[BaseRoute]:
    """The routes of ``router`` and of the routers it includes (kept whole by FastAPI)."""
    found: list[BaseRoute] = []
    for route in router.routes:
        inner = getattr(route, "original_router", None)
        found += routes_of(inner) if isinstance(inner, APIRouter) else [route]
    return found


def _taking(routes: Iterable[BaseRoute], methods: frozenset[str]) -> set[str]:
    return {
        r.path_format
        for r in routes
        if isinstance(r, APIRoute) and (r.methods or set()) & methods and r.name != FORM_PAGE
    }


def pages(routes: Iterable[BaseRoute]) -> frozenset[str]:
    """The paths (templates) that a page answers by GET."""
    return frozenset(_taking(routes, GET))


def post_only(routes: Iterable[BaseRoute]) -> list[str]:
    """The paths (templates) of the POST routes that no page answers by GET."""
    routes = list(routes)
    return sorted(_taking(routes, frozenset({"POST"})) - pages(routes))


def form_page(path: str, shown: frozenset[str]) -> str:
    """The page a GET to ``path`` goes to: its longest leading part (whole segments,
    without the last) that is one of ``shown``, else the home page."""
    parts = path.strip("/").split("/")
    for end in range(len(parts) - 1, 0, -1):
        candidate = "/" + "/".join(parts[:end])
        if candidate in shown:
            return candidate
    return HOME


def _sender(page: str) -> Callable[[Request], Awaitable[Response]]:
    async def send_to_form_page(request: Request) -> Response:
        # The ids in the path become the page's own, quoted again as they came.
        values = {k: quote(str(v), safe="") for k, v in request.path_params.items()}
        return back_to(request, page.format_map(values))

    return send_to_form_page


def add_to(router: APIRouter) -> None:
    """Give every POST-only path of ``router`` its GET: a 303 to the form's page.
    Call it once every page's routes are in."""
    routes = routes_of(router)
    shown = pages(routes)
    for path in post_only(routes):
        router.add_api_route(
            path,
            _sender(form_page(path, shown)),
            methods=sorted(GET),
            name=FORM_PAGE,
            include_in_schema=False,
            route_class_override=PageRoute,
        )
