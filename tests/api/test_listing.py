"""The list route's query, read as Starlette reads it, and parsed once per query string."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from maskmail.api.memo import Memo


def request(query: bytes) -> Request:
    return Request({"type": "http", "method": "GET", "query_string": query, "headers": []})


@pytest.mark.parametrize(
    "query",
    [b"paging=1&size=5&page=2", b"page=1&page=3", b"size=&paging", b"a=%C3%A9&b=x+y", b""],
)
def test_the_same_values_as_starlettes_query_params(query: bytes) -> None:
    got = Memo().query(query)
    expected = request(query).query_params
    assert dict(got) == dict(expected.items())
    for name in ("paging", "page", "size", "a", "b"):
        assert got.get(name) == expected.get(name)


def test_parsed_once_and_read_only() -> None:
    memo = Memo()
    first = memo.query(b"paging=1&page=7")
    assert memo.query(b"paging=1&page=7") is first
    with pytest.raises(TypeError):
        first["page"] = "8"  # type: ignore[index]
