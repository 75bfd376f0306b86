"""Refuse request bodies over a size limit, in the error body of the route asked for.

Starlette's RequestBodyLimitMiddleware answers in plain text; our clients parse JSON, and
a browser posting a dashboard form gets a page (``http_shared/problems.wants_page``).
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import Message, Receive, Scope, Send

from maskmail.http_shared.problems import ScopeAnswer

Answer = ScopeAnswer

MESSAGE = "the request body is too large"


class BodyTooLarge(HTTPException):
    """Raised while reading; FastAPI passes HTTPExceptions on to the error handlers."""

    def __init__(self) -> None:
        super().__init__(status_code=413, detail=MESSAGE)


class BodyLimit:
    """413 when Content-Length, or the bytes actually sent, pass ``limit`` (``api/front.py``
    asks before the request goes on).

    A body of unknown length (chunked) is read here, up to the limit, before any route
    runs: a route that ignores its body would otherwise answer as if it had fit, and one
    that reads it would fail halfway. Such bodies are rare and at most ``limit`` bytes.
    """

    def __init__(self, limit: int, answer: Answer) -> None:
        self.limit = limit
        self.answer = answer

    async def admit(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """The request's body as the app should read it, or None once it was refused."""
        chunked = False
        for name, value in scope["headers"]:
            if name == b"content-length" and (not value.isdigit() or int(value) > self.limit):
                await self._refuse(scope, receive, send)
                return None
            if name == b"transfer-encoding":
                chunked = True
        if chunked:
            buffered = await self._read_within_limit(receive)
            if buffered is None:
                await self._refuse(scope, receive, send)
                return None
            receive = _replay(buffered, receive)
        return self._counted(receive)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = self.answer(scope, BodyTooLarge())
        # The rest of the body is never read: the connection cannot be reused.
        response.headers["connection"] = "close"
        await response(scope, receive, send)

    async def _read_within_limit(self, receive: Receive) -> list[Message] | None:
        """The body's messages, or None once they pass the limit."""
        messages: list[Message] = []
        seen = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                return messages
            seen += len(message.get("body", b""))
            if seen > self.limit:
                return None
            if not message.get("more_body", False):
                return messages

    def _counted(self, receive: Receive) -> Receive:
        seen = 0

        async def counted_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge
            return message

        return counted_receive


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed
