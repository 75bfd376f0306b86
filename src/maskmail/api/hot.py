"""The list and create routes, answered without the framework's routing machinery.

``GET`` and ``POST /v3/relay/addresses`` are nearly all of a client's traffic. For them,
FastAPI's per-request work (routing, the exception middleware, the exit stack, solving
the endpoint's signature) cost about as much as the endpoint itself, so this
middleware, the innermost, calls the same endpoint functions directly. Every middleware
outside it (paths, CORS, body limit) still applies, errors are answered by the one
mapping (http_shared/problems.py), and FastAPI keeps the routes for its documentation and for
every other method.

Being the last layer before routing, it is also where a HEAD becomes the GET of its path
(``api/head.py``): only after the GET's own lookup has missed, so that a GET pays nothing
for it, and a HEAD to the list takes the hot route as its GET does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from maskmail.api import errors
from maskmail.api.head import HEAD, as_get
from maskmail.api.proxy import ROUTE_PATH, route_path

Endpoint = Callable[[Request], Awaitable[Response]]


class HotRoutes:
    """Answers ``(method, path)`` pairs with their endpoint; passes everything else on."""

    def __init__(self, app: ASGIApp, routes: dict[tuple[str, str], Endpoint]) -> None:
        self.app = app
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Kept in the scope by api/front.py; worked out here only without it in front.
        path = scope.get(ROUTE_PATH) or route_path(scope)
        endpoint = self.routes.get((scope["method"], path))
        if endpoint is None:
            if scope["method"] == HEAD:
                await as_get(self, scope, receive, send)
            else:
                await self.app(scope, receive, send)
            return
        request = Request(scope, receive, send)
        try:
            response = await endpoint(request)
        except Exception as exc:
            response = errors.answer(request, exc)
        await response(scope, receive, send)
