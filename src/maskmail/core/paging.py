"""How the list endpoint reads its query: lenient, because listing never fails."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

DEFAULT_PAGE = 1
DEFAULT_SIZE = 10


@dataclass(frozen=True, slots=True)
class PageRequest:
    page: int
    size: int
    # The rows before the page: worked out once, a plain field for every reader.
    offset: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "offset", (self.page - 1) * self.size)


def positive_int(raw: str | None, default: int) -> int:
    """``raw`` as a positive integer, or ``default`` for anything else."""
    if raw is None:
        return default
    text = raw.strip()
    # isdecimal() alone accepts non-ASCII digits such as Arabic-Indic ones.
    if not text.isascii() or not text.isdecimal() or len(text) > 18:
        return default
    value = int(text)
    return value if value > 0 else default


def wants_paging(raw: str | None) -> bool:
    return raw is not None and raw.strip() == "1"


def page_request(page: str | None, size: str | None, max_size: int) -> PageRequest:
    return PageRequest(
        page=positive_int(page, DEFAULT_PAGE),
        size=min(positive_int(size, DEFAULT_SIZE), max_size),
    )


def requested_page(query: Mapping[str, str], max_size: int) -> PageRequest | None:
    """The page a list query asks for (``paging=1``, ``page``, ``size``), with its offset;
    None for the whole list."""
    if not wants_paging(query.get("paging")):
        return None
    return page_request(query.get("page"), query.get("size"), max_size)


def has_next(request: PageRequest, count: int) -> bool:
    return request.page * request.size < count
