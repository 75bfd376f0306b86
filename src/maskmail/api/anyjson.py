"""Request bodies are read as JSON whatever their Content-Type.

``curl -d '{...}'`` labels its body ``application/x-www-form-urlencoded``, and scripts
send ``text/plain``; FastAPI would hand such a body to the model as bytes and refuse it.
No API route takes a form or a file, so every body sent to one is parsed as JSON, and
one that is not JSON is a 422 that says so. Other paths (pages that post forms) are left
alone.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from maskmail.api.hot import route_path

JSON = b"application/json"
WITH_BODY = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# The JSON API: the SPEC's routes and the addy.io and SimpleLogin contracts.
API_PREFIXES = ("/v3/", "/api/")


def _is_json(content_type: bytes) -> bool:
    media = content_type.partition(b";")[0].strip().lower()
    return media == JSON or (media.startswith(b"application/") and media.endswith(b"+json"))


class AnyContentTypeIsJson:
    """ASGI middleware: a body's Content-Type, if it is not a JSON type, is replaced."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] in WITH_BODY
            and route_path(scope).startswith(API_PREFIXES)
        ):
            headers = scope["headers"]
            if any(n == b"content-type" and not _is_json(v) for n, v in headers):
                scope = {
                    **scope,
                    "headers": [(n, JSON if n == b"content-type" else v) for n, v in headers],
                }
        await self.app(scope, receive, send)
