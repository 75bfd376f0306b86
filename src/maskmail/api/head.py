"""HEAD answered wherever GET is (RFC 9110 9.3.2): the GET's status and headers, no body.

Starlette's own routes add HEAD to a GET route; FastAPI's do not, so a HEAD to a page, a
read of the API, the documentation or a probe was a 405. Rather than a second route for
every GET (which routing would walk on every request, and the OpenAPI document would
list as a second operation), a HEAD is routed as the GET of its path: the same route,
the same dependencies, so the same session, key check and rate limit, and the same
answer, which changes nothing that the GET would not. The method is HEAD again before
the answer starts, so that the server sends no body and the log and the metrics see a
HEAD; the body is dropped here too, whatever the server does.

``api/hot.py`` calls ``as_get`` for the app (only a HEAD pays for it, never a GET), and
``api/allow.py`` names HEAD in ``Allow`` wherever it names GET.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

GET = "GET"
HEAD = "HEAD"
_BODY = "http.response.body"
# A file answered by the server itself (the ASGI pathsend extension): its bytes are a body.
_PATHSEND = "http.response.pathsend"


def with_head(methods: frozenset[str] | set[str]) -> frozenset[str]:
    """The methods a path takes whose routes take ``methods``: HEAD too where GET."""
    return frozenset(methods | {HEAD}) if GET in methods else frozenset(methods)


async def as_get(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer the HEAD request ``scope`` as ``app`` answers its GET, without the body."""
    scope["method"] = GET

    async def headers_only(message: Message) -> None:
        scope["method"] = HEAD
        kind = message["type"]
        if kind in (_BODY, _PATHSEND):
            more = kind == _BODY and message.get("more_body", False)
            message = {"type": _BODY, "body": b"", "more_body": more}
        await send(message)

    try:
        await app(scope, receive, headers_only)
    finally:
        scope["method"] = HEAD


class HeadAsGet:
    """``as_get`` as a middleware, for an app without ``api/hot.py`` in front of its
    routes (the mail plane's probes, ``health.health_app``)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == HEAD:
            await as_get(self.app, scope, receive, send)
        else:
            await self.app(scope, receive, send)
