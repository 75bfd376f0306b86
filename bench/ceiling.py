"""The ceilings: apps that answer with maskmail's own response bytes from memory.

``app`` is a bare ASGI app: no routing beyond method and ``paging=1``, no auth and no
database, so on the same server (uvicorn) and worker count it bounds what any Python API
could reach here. ``fastapi_app`` is the second ceiling: a bare FastAPI app with the same
two routes and no middleware of ours, so maskmail against it shows what our own code costs
on top of the framework DESIGN.md fixes.
BENCH_CEILING_BODIES names a JSON file mapping "page", "full" and "post" to response texts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from starlette.responses import Response

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def _load() -> dict[str, bytes]:
    path = os.environ.get("BENCH_CEILING_BODIES")
    texts: dict[str, str] = json.loads(Path(path).read_text()) if path else {}
    return {name: text.encode() for name, text in texts.items()}


BODIES = _load()
EMPTY = b"[]"


def _headers(body: bytes) -> list[tuple[bytes, bytes]]:
    return [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]


RESPONSES = {name: (body, _headers(body)) for name, body in BODIES.items()}


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":  # nothing to set up or tear down
        while True:
            message = await receive()
            kind = message["type"].rsplit(".", 1)[-1]
            await send({"type": f"lifespan.{kind}.complete"})
            if kind == "shutdown":
                return
    if scope["method"] == "POST":
        name = "post"
    else:
        name = "page" if b"paging=1" in scope["query_string"] else "full"
    body, headers = RESPONSES.get(name, (EMPTY, _headers(EMPTY)))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _fastapi() -> FastAPI:
    bare = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    path = "/v3/relay/addresses"

    @bare.get(path)
    async def listing(request: Request) -> Response:
        name = "page" if request.query_params.get("paging") == "1" else "full"
        return Response(BODIES.get(name, EMPTY), media_type="application/json")

    @bare.post(path)
    async def create() -> Response:
        return Response(BODIES.get("post", EMPTY), media_type="application/json")

    return bare


fastapi_app = _fastapi()
