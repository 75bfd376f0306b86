"""Refuse request bodies over a size limit, with the API's own error body.

Starlette's RequestBodyLimitMiddleware answers in plain text; our clients parse JSON.
"""

from __future__ import annotations

import orjson
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MESSAGE = "the request body is too large"
PAYLOAD_TOO_LARGE = orjson.dumps({"code": "payload_too_large", "message": MESSAGE, "details": {}})


class BodyTooLarge(HTTPException):
    """Raised while reading; FastAPI passes HTTPExceptions on to the error handlers."""

    def __init__(self) -> None:
        super().__init__(status_code=413, detail=MESSAGE)


class BodyLimit:
    """ASGI middleware: 413 when Content-Length, or the bytes actually sent, pass ``limit``."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length" and (not value.isdigit() or int(value) > self.limit):
                await _refuse(send)
                return
        seen = 0

        async def counted_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge
            return message

        await self.app(scope, counted_receive, send)


async def _refuse(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(PAYLOAD_TOO_LARGE)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": PAYLOAD_TOO_LARGE})
