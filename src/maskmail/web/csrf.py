"""Cross-site request forgery: every state-changing request must come from our own pages."""

from __future__ import annotations

import hmac

from fastapi import Request
from starlette.datastructures import FormData

from maskmail.http_shared.public_url import site_url

HEADER = "x-csrf-token"
FIELD = "csrf"


class Forbidden(Exception):
    """A request another site may have made for the user: answered 403."""


def check_origin(request: Request) -> None:
    """The Origin (or, without one, Sec-Fetch-Site) must be our own."""
    origin = request.headers.get("origin")
    if origin is not None:
        url = site_url(request)
        if origin != f"{url.scheme}://{url.netloc}":
            raise Forbidden("cross-site request")
        return
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in {"same-origin", "none"}:
        raise Forbidden("cross-site request")


def check(request: Request, form: FormData, expected: str) -> None:
    """Origin, then the session's token, from the form or the header htmx sends."""
    check_origin(request)
    sent = form.get(FIELD) or request.headers.get(HEADER) or ""
    if not isinstance(sent, str) or not hmac.compare_digest(sent, expected):
        raise Forbidden("missing or wrong form token")
