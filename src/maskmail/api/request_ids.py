"""Each HTTP request gets an id that every line logged while serving it carries."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from maskmail import logs


class RequestIds:
    """Outermost middleware: the id is bound before anything else can log."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            logs.bind("request_id")
        await self.app(scope, receive, send)
