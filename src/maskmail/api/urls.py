"""Absolute URLs as the client sees them, through a trusted reverse proxy if there is one."""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import parse_qsl, urlencode

from fastapi import Request
from starlette.datastructures import URL

from maskmail.api.proxy import trusted_peer
from maskmail.config import Settings

_HOST = re.compile(r"^[A-Za-z0-9.\-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$")


def _first(value: str | None) -> str | None:
    if value is None:
        return None
    first = value.split(",")[0].strip()
    return first or None


def public_url(request: Request, settings: Settings) -> URL:
    """The request URL, with scheme and host from X-Forwarded-* when the peer is trusted."""
    url = request.url
    if not trusted_peer(request.client.host if request.client else None, settings):
        return url
    proto = _first(request.headers.get("x-forwarded-proto"))
    if proto and proto.lower() in {"http", "https"}:
        url = url.replace(scheme=proto.lower())
    host = _first(request.headers.get("x-forwarded-host"))
    if host and _HOST.match(host):
        url = url.replace(netloc=host)
    return url


def page_links(url: URL) -> Callable[[int], str]:
    """``url`` with ``page`` changed, for each page asked: the query is parsed once, and
    ``page`` goes last, as Starlette's ``include_query_params`` puts it."""
    base = str(url).partition("?")[0]
    kept = [(k, v) for k, v in parse_qsl(url.query, keep_blank_values=True) if k != "page"]

    def link(page: int) -> str:
        return f"{base}?{urlencode([*kept, ('page', str(page))])}"

    return link
