"""Page links: remembered per URL and forwarding headers, never across them."""

from __future__ import annotations

from starlette.requests import Request

from maskmail.api.memo import Memo
from maskmail.api.page_links import links_for
from maskmail.config import Settings

SETTINGS = Settings(trusted_proxies="10.0.0.1")


def request(peer: str, query: bytes = b"paging=1", **headers: str) -> Request:
    raw = [(b"host", b"api.example")] + [
        (name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()
    ]
    return Request(
        {
            "type": "http",
            "method": "GET",
            "scheme": "http",
            "server": ("127.0.0.1", 8000),
            "client": (peer, 5000),
            "root_path": "",
            "path": "/v3/relay/addresses",
            "query_string": query,
            "headers": raw,
        }
    )


def test_links_follow_each_requests_url_and_trusted_forwarding_headers() -> None:
    memo = Memo()
    plain = links_for(request("10.0.0.1"), SETTINGS, memo)
    assert plain(2) == "http://api.example/v3/relay/addresses?paging=1&page=2"
    forwarded = links_for(
        request("10.0.0.1", x_forwarded_proto="https", x_forwarded_host="relay.example"),
        SETTINGS,
        memo,
    )
    assert forwarded(2) == "https://relay.example/v3/relay/addresses?paging=1&page=2"
    # The same headers from a peer that is not a trusted proxy are ignored.
    stranger = links_for(
        request("192.0.2.9", x_forwarded_proto="https", x_forwarded_host="relay.example"),
        SETTINGS,
        memo,
    )
    assert stranger(2) == "http://api.example/v3/relay/addresses?paging=1&page=2"
    other_query = links_for(request("10.0.0.1", b"paging=1&size=5&page=3"), SETTINGS, memo)
    assert other_query(4) == "http://api.example/v3/relay/addresses?paging=1&size=5&page=4"
    assert links_for(request("10.0.0.1"), SETTINGS, memo) is plain


def test_the_memory_is_bounded() -> None:
    memo = Memo(size=3)
    for n in range(10):
        link = links_for(request("10.0.0.1", f"paging=1&n={n}".encode()), SETTINGS, memo)
        assert link(2).endswith(f"?paging=1&n={n}&page=2")
        assert len(memo._links) <= 3
