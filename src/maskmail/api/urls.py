"""Absolute URLs as the client sees them, through a trusted reverse proxy if there is one."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode

from fastapi import Request
from starlette.datastructures import URL

from maskmail.api.forwarded import from_trusted_proxy
from maskmail.api.memo import Link, Memo
from maskmail.config import Settings

_HOST = re.compile(r"^[A-Za-z0-9.\-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$")


def _first(value: str | None) -> str | None:
    if value is None:
        return None
    first = value.split(",")[0].strip()
    return first or None


def public_url(request: Request, trusted: bool) -> URL:
    """The request URL, with scheme and host from X-Forwarded-* when the peer is trusted."""
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


def server_url(request: Request, settings: Settings) -> str:
    """The URL people paste into their clients as the server: the public scheme and host,
    and the path prefix maskmail is served under."""
    url = public_url(request, from_trusted_proxy(request.scope, settings))
    prefix = str(request.scope.get("root_path", "")).rstrip("/")
    return f"{url.scheme}://{url.netloc}{prefix}"


def page_links(url: URL) -> Link:
    """``url`` with ``page`` changed, for each page asked: the query is parsed once, and
    ``page`` goes last, as Starlette's ``include_query_params`` puts it."""
    base = str(url).partition("?")[0]
    kept = [(k, v) for k, v in parse_qsl(url.query, keep_blank_values=True) if k != "page"]

    def link(page: int) -> str:
        return f"{base}?{urlencode([*kept, ('page', str(page))])}"

    return link


def links_for(request: Request, settings: Settings, memo: Memo) -> Link:
    """``page_links(public_url(request, trusted))``, remembered per request URL and
    forwarding headers, never across them."""
    scope = request.scope
    headers = request.headers
    trusted = from_trusted_proxy(scope, settings)
    key = (
        scope.get("scheme"),
        scope.get("server"),
        scope.get("root_path"),
        scope["path"],
        scope.get("query_string"),
        headers.get("host"),
        headers.get("x-forwarded-proto") if trusted else None,
        headers.get("x-forwarded-host") if trusted else None,
        trusted,
    )
    return memo.links(key, lambda: page_links(public_url(request, trusted)))
