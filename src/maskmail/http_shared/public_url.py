"""Absolute URLs as the client sees them, through a trusted reverse proxy if there is one."""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urlencode

from starlette.datastructures import URL
from starlette.requests import Request

from maskmail.http_shared.forwarded import trusts_peer

_HOST = re.compile(r"^[A-Za-z0-9.\-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$")


def _first(value: str | None) -> str | None:
    if value is None:
        return None
    first = value.split(",")[0].strip()
    return first or None


def public_url(request: Request, trusted: bool) -> URL:
    """The request URL, with scheme and host from X-Forwarded-* when ``trusted`` (the
    peer is a trusted proxy): for callers that asked ``from_trusted_proxy`` already."""
    url = request.url
    if not trusted:
        return url
    proto = _first(request.headers.get("x-forwarded-proto"))
    if proto and proto.lower() in {"http", "https"}:
        url = url.replace(scheme=proto.lower())
    host = _first(request.headers.get("x-forwarded-host"))
    if host and _HOST.match(host):
        url = url.replace(netloc=host)
    return url


def site_url(request: Request) -> URL:
    """The request's URL as the browser or client sees it: the one composition of the
    trusted-proxy rule and the forwarded scheme and host."""
    return public_url(request, trusts_peer(request))


def server_url(request: Request) -> str:
    """The URL people paste into their clients as the server: the public scheme and host,
    and the path prefix maskmail is served under."""
    url = site_url(request)
    prefix = str(request.scope.get("root_path", "")).rstrip("/")
    return f"{url.scheme}://{url.netloc}{prefix}"


def url_to(request: Request, route: str, **query: str) -> str:
    """The absolute URL of the named route with ``query``, as the client will open it."""
    path = request.url_for(route).path
    return str(site_url(request).replace(path=path, query=urlencode(query)))


# The route of the page a mailbox's verification link opens (web/pages/mailbox_link.py);
# both doors mail that link.
VERIFY_PAGE = "show_verify_page"


def verify_link_maker(request: Request) -> Callable[[str], str]:
    """The link a mailbox's verification message carries for a token, as the owner will
    open it: through the trusted proxy, if any, as the paging links are."""
    return lambda token: url_to(request, VERIFY_PAGE, token=token)
