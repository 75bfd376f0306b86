"""The paging links of a list, as the client sees them (through a trusted proxy)."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import URL
from starlette.requests import Request

from maskmail.api.memo import Link, Memo
from maskmail.config import Settings
from maskmail.http_shared.forwarded import from_trusted_proxy
from maskmail.http_shared.public_url import public_url


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
