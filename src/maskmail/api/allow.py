"""405 answers that list, in ``Allow``, every method the path accepts (RFC 9110 15.5.6).

Starlette's router stops at the first route whose path matches and names only that
route's methods; a path such as ``/v3/relay/addresses/{id}`` has four routes.
"""

from __future__ import annotations

from collections.abc import Awaitable

from fastapi import FastAPI, Request
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.routing import BaseRoute, Match

from maskmail.api.head import with_head

METHODS = ("DELETE", "GET", "HEAD", "PATCH", "POST", "PUT")


def allowed_methods(routes: list[BaseRoute], request: Request) -> list[str]:
    """The methods some route answers on the request's path: each one asked of the routes
    as they match, so that routers included in routers are seen too; HEAD wherever GET
    (api/head.py)."""
    taken = with_head(
        {
            method
            for method in METHODS
            if any(
                route.matches({**request.scope, "method": method})[0] is Match.FULL
                for route in routes
            )
        }
    )
    return [method for method in METHODS if method in taken]


def install(app: FastAPI) -> None:
    async def method_not_allowed(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        allowed = allowed_methods(app.router.routes, request)
        headers = {**(exc.headers or {}), "Allow": ", ".join(allowed)} if allowed else exc.headers
        # Answered by the app's handler of HTTP errors: the API's JSON, or a page for a
        # browser on the dashboard's side (api/app.py ``finish``).
        answer = app.exception_handlers[HTTPException]
        response = answer(request, HTTPException(405, detail=exc.detail, headers=headers))
        return await response if isinstance(response, Awaitable) else response

    app.add_exception_handler(405, method_not_allowed)
