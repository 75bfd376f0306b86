"""The page a mailbox's verification link opens, and its button (no key, no session).

Opening the link changes nothing, so that a mail scanner that follows links does not
verify the mailbox; the page's button posts the token. The routes are documented in the
API's schema, so the composition hands in how their errors are documented.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from starlette.responses import HTMLResponse, Response

from maskmail.http_shared.connection import Conn
from maskmail.http_shared.forwarded import client_host
from maskmail.http_shared.public_url import VERIFY_PAGE
from maskmail.services.mailboxes import verify_by_link
from maskmail.web.render import page

PageErrors = Callable[..., dict[int | str, dict[str, Any]]]
# The link's page and its button: whoever reads the mailbox has the token, not a key.
NO_KEY: dict[str, Any] = {"security": []}
# With the token in its address, no Referer carries it (no cache keeps a dashboard page),
# and no search engine lists it.
_HEADERS = {"Referrer-Policy": "no-referrer", "X-Robots-Tag": "noindex"}

Token = Annotated[str, Query(max_length=128)]


def _page(request: Request, *, action: str = "", email: str | None = None) -> Response:
    """A page of the dashboard's layout, seen by no one signed in."""
    answer = page(request, "mailbox_link.html", None, action=action, email=email)
    answer.headers.update(_HEADERS)
    return answer


async def show_verify_page(request: Request, token: Token) -> Response:
    await request.app.state.limiter.hit(f"anon:{client_host(request)}")
    return _page(request, action="verify?" + urlencode({"token": token}))


async def verify_mailbox_link(request: Request, conn: Conn, token: Token) -> Response:
    await request.app.state.limiter.hit(f"anon:{client_host(request)}")
    mailbox = await verify_by_link(conn, token)
    return _page(request, email=mailbox.email)


def routes(page_errors: PageErrors) -> APIRouter:
    """The two routes at ``/v3/relay/mailboxes/verify``; ``page_errors(*statuses)``
    documents the JSON problems they answer."""
    router = APIRouter(prefix="/v3/relay", tags=["mailboxes"])
    router.add_api_route(
        "/mailboxes/verify",
        show_verify_page,
        methods=["GET"],
        name=VERIFY_PAGE,
        response_class=HTMLResponse,
        # 422: no token, or one longer than any this server makes.
        responses={200: {"content": {"text/html": {}}}, **page_errors(422, 429, 503)},
        openapi_extra=NO_KEY,
        summary="The page the mailed link opens: a button that verifies (no key needed)",
        description="Opening the link changes nothing, so that a mail scanner that follows "
        "links does not verify the mailbox; the page's button posts the token.",
    )
    router.add_api_route(
        "/mailboxes/verify",
        verify_mailbox_link,
        methods=["POST"],
        response_class=HTMLResponse,
        responses={200: {"content": {"text/html": {}}}, **page_errors(404, 422, 429, 503)},
        openapi_extra=NO_KEY,
        summary="Verify a mailbox by the token of the mailed link (no key needed)",
        description="What the link's page's button posts, to the link's own address; a used, "
        "expired or unknown token is a 404.",
    )
    return router
