"""The list query's lenient parsing (SPEC decisions 1 and 2)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maskmail.core import paging


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, 7), ("3", 3), (" 3 ", 3), ("0", 7), ("-2", 7), ("2.5", 7), ("abc", 7), ("", 7),
        ("+4", 7), ("١٢", 7), ("9" * 19, 7), ("1e3", 7),
    ],
)  # fmt: skip
def test_positive_int_falls_back_to_default(raw: str | None, expected: int) -> None:
    assert paging.positive_int(raw, 7) == expected


def test_size_is_clamped_to_the_maximum() -> None:
    assert paging.page_request("1", "1000", 100).size == 100
    assert paging.page_request("1", "100", 100).size == 100
    assert paging.page_request("1", "1", 100).size == 1


def test_defaults_are_page_1_size_10() -> None:
    assert paging.page_request(None, None, 100) == paging.PageRequest(page=1, size=10)


def test_only_the_value_1_turns_paging_on() -> None:
    assert paging.wants_paging("1")
    for other in (None, "0", "true", "2", "", "01x"):
        assert not paging.wants_paging(other)


def test_offset_and_next() -> None:
    request = paging.PageRequest(page=3, size=10)
    assert request.offset == 20
    assert paging.has_next(request, 31)
    assert not paging.has_next(request, 30)


@given(page=st.text(), size=st.text(), max_size=st.integers(min_value=1, max_value=1000))
def test_any_text_gives_a_usable_page(page: str, size: str, max_size: int) -> None:
    request = paging.page_request(page, size, max_size)
    assert request.page >= 1
    assert 1 <= request.size <= max_size


def test_a_list_query_asks_for_a_page_only_with_paging_1() -> None:
    assert paging.requested_page({"page": "2", "size": "5"}, 100) is None
    assert paging.requested_page({"paging": "0", "page": "2"}, 100) is None
    wanted = paging.requested_page({"paging": "1", "page": "3", "size": "500"}, 100)
    assert wanted == paging.PageRequest(page=3, size=100)
    assert wanted is not None and wanted.offset == 200
