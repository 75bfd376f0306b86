"""What every HTTP request goes through before its route, as one ASGI layer.

In order: the request's id for the log lines (``logs.bind``), the path as routing should
see it (``api/proxy.py``), CORS, the body limit (``api/bodylimit.py``), a JSON body
whatever its Content-Type on the API's paths (``api/anyjson.py``); after the answer, its
latency by route template (``api/metrics.py``) and a note of the key's use
(``api/key_use.py``, written later, off the request path). The path routing sees is
worked out once, kept in the scope (``api/proxy.ROUTE_PATH``) and read by all of
them. An exception no handler answered becomes the one mapping's 500 here
(``maskmail/http_shared/problems.py``), logged once: Starlette's outermost error
middleware answers too, but then re-raises, and uvicorn closes a keep-alive connection
on an exception.

Why one layer and not one middleware each: every ASGI layer is a coroutine and a wrapped
``send`` per request, and one layer each cost the list route a large part of its
throughput (docs/benchmarks.md). Here they share one coroutine and one wrapped ``send``.
For the same reason the CORS middleware (Starlette's), which parses the headers of every
request, only sees requests that carry an ``Origin``; the others get the
``Vary: Origin`` it would have added.
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from maskmail import logs
from maskmail.api.anyjson import WITH_BODY, as_json
from maskmail.api.bodylimit import Answer, BodyLimit
from maskmail.api.key_use import KeyUses
from maskmail.api.metrics import RequestTimes
from maskmail.api.proxy import ROUTE_PATH, Paths

# The JSON API (the SPEC's routes and the addy.io and SimpleLogin contracts): its routes
# authenticate with a key, so a success there means the key is live.
API_PREFIXES = ("/v3/", "/api/")
_VARY = (b"vary", b"Origin")


def _vary_origin(message: Message) -> None:
    """What Starlette's CORS middleware adds to an answer to a request without Origin."""
    headers = list(message.get("headers", ()))
    if any(name.lower() == b"vary" for name, _ in headers):
        message["headers"] = headers
        merged = MutableHeaders(scope=message)
        merged["Vary"] = ", ".join([*merged.getlist("Vary"), "Origin"])
    else:
        headers.append(_VARY)
        message["headers"] = headers


class Front:
    """The one middleware of ours; ``cors`` wraps an app in the CORS middleware."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        paths: Paths,
        body_limit: BodyLimit,
        times: RequestTimes,
        cors: Callable[[ASGIApp], ASGIApp],
        answer: Answer,
        key_uses: KeyUses,
    ) -> None:
        self.app = app
        self.paths = paths
        self.body_limit = body_limit
        self.times = times
        self.answer = answer
        self.key_uses = key_uses
        self.cors = cors(self._guarded)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                scope = self.paths.rewrite(scope)
            await self.app(scope, receive, send)
            return
        logs.bind("request_id")
        scope = self.paths.rewrite(scope)
        started = perf_counter()
        status = 0
        origin = any(name == b"origin" for name, _ in scope["headers"])

        async def sent(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                if not origin:
                    _vary_origin(message)
            await send(message)

        try:
            try:
                if origin:
                    await self.cors(scope, receive, sent)
                else:
                    await self._guarded(scope, receive, sent)
            except Exception as exc:
                if status:  # half an answer went out: only closing the connection ends it
                    raise
                await self.answer(scope, exc)(scope, receive, sent)
        finally:
            self.times.observe(scope, status or 500, perf_counter() - started)
        if scope[ROUTE_PATH].startswith(API_PREFIXES):
            self.key_uses.answered(scope, status)

    async def _guarded(self, scope: Scope, receive: Receive, send: Send) -> None:
        admitted = await self.body_limit.admit(scope, receive, send)
        if admitted is None:
            return
        if scope["method"] in WITH_BODY and scope[ROUTE_PATH].startswith(API_PREFIXES):
            scope["headers"] = as_json(scope["headers"])
        await self.app(scope, admitted, send)
