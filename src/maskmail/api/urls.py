"""Absolute URLs as the client sees them, through a trusted reverse proxy if there is one."""

from __future__ import annotations

import re

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


def with_page(url: URL, page: int) -> str:
    """The same query with ``page`` changed."""
    return str(url.include_query_params(page=page))
