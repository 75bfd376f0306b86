"""What the list route remembers between requests: parsed query strings and page links.

Clients repeat their few query strings and page through the same URLs, and parsing the
query or building the links again cost a noticeable share of a page request. Both
belong to one application: made in its lifespan, dropped with it, and bounded, so odd
query strings cannot grow them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from types import MappingProxyType
from urllib.parse import parse_qsl

MAX_REMEMBERED = 1024
Link = Callable[[int], str]


def parse_query(raw: bytes) -> Mapping[str, str]:
    """The query's values, the last of a repeated name winning, as in Starlette's
    ``query_params``; read-only, since it is shared."""
    return MappingProxyType(dict(parse_qsl(raw.decode("latin-1"), keep_blank_values=True)))


class Memo:
    def __init__(self, size: int = MAX_REMEMBERED) -> None:
        self.size = size
        self.query = lru_cache(maxsize=size)(parse_query)
        self._links: dict[tuple[object, ...], Link] = {}

    def links(self, key: tuple[object, ...], make: Callable[[], Link]) -> Link:
        """The links remembered for ``key``, else ``make()``'s, remembered (each link
        too); everything is forgotten when the memory is full."""
        found = self._links.get(key)
        if found is None:
            if len(self._links) >= self.size:
                self._links.clear()
            found = self._links[key] = lru_cache(maxsize=16)(make())
        return found

    def clear(self) -> None:
        self.query.cache_clear()
        self._links.clear()
