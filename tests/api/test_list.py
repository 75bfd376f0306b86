"""GET /v3/relay/addresses: SPEC decisions 1 to 4."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maskmail.api import listing
from tests.api.conftest import BASE, Caller
from tests.profiles import examples

pytestmark = pytest.mark.anyio


async def _create(client: httpx.AsyncClient, caller: Caller, n: int) -> list[int]:
    ids = []
    for _ in range(n):
        response = await client.post(BASE, headers=caller.headers)
        assert response.status_code == 200
        ids.append(response.json()["id"])
    return ids


async def _page(client: httpx.AsyncClient, caller: Caller, query: str) -> dict[str, object]:
    response = await client.get(f"{BASE}?{query}", headers=caller.headers)
    assert response.status_code == 200
    body = response.json()
    assert isinstance(body, dict)
    return body


def _ids(body: object) -> list[int]:
    assert isinstance(body, list)
    return [item["id"] for item in body]


async def test_without_paging_all_objects_oldest_first(
    client: httpx.AsyncClient, alice: Caller
) -> None:
    ids = await _create(client, alice, 13)
    for query in ("", "?paging=0", "?paging=true", "?paging=2&page=2&size=1", "?paging="):
        response = await client.get(BASE + query, headers=alice.headers)
        assert response.status_code == 200
        assert _ids(response.json()) == ids, query


@pytest.mark.parametrize("total", [5, 6, 7])
async def test_a_list_longer_than_a_chunk_is_streamed_whole_and_in_order(
    client: httpx.AsyncClient, alice: Caller, monkeypatch: pytest.MonkeyPatch, total: int
) -> None:
    ids = await _create(client, alice, total)
    made = (await client.get(f"{BASE}?paging=1&size=100", headers=alice.headers)).json()
    monkeypatch.setattr(listing, "CHUNK", 3)
    response = await client.get(BASE, headers=alice.headers)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert "content-length" not in response.headers  # streamed, not built whole
    assert response.json() == made["results"]
    assert _ids(response.json()) == ids


async def test_empty_list_is_an_empty_array(client: httpx.AsyncClient, alice: Caller) -> None:
    response = await client.get(BASE, headers=alice.headers)
    assert (response.status_code, response.json()) == (200, [])
    body = await _page(client, alice, "paging=1")
    assert body == {"count": 0, "next": None, "previous": None, "results": []}


async def test_paging_defaults_to_page_1_size_10(client: httpx.AsyncClient, alice: Caller) -> None:
    ids = await _create(client, alice, 12)
    body = await _page(client, alice, "paging=1")
    assert body["count"] == 12
    assert _ids(body["results"]) == ids[:10]
    assert body["previous"] is None
    assert body["next"] == f"http://testserver{BASE}?paging=1&page=2"


async def test_pages_are_stable_and_complete(client: httpx.AsyncClient, alice: Caller) -> None:
    ids = await _create(client, alice, 7)
    seen: list[int] = []
    for page in (1, 2, 3):
        seen += _ids((await _page(client, alice, f"paging=1&size=3&page={page}"))["results"])
    assert seen == ids


async def test_next_and_previous_are_absolute_urls_of_the_same_query(
    client: httpx.AsyncClient, alice: Caller
) -> None:
    await _create(client, alice, 5)
    body = await _page(client, alice, "paging=1&size=2&page=2&color=red")
    assert isinstance(body["next"], str) and isinstance(body["previous"], str)
    nxt, prev = urlsplit(body["next"]), urlsplit(body["previous"])
    assert (nxt.scheme, nxt.netloc, nxt.path) == ("http", "testserver", BASE)
    assert parse_qs(nxt.query) == {"paging": ["1"], "size": ["2"], "page": ["3"], "color": ["red"]}
    assert parse_qs(prev.query)["page"] == ["1"]
    last = await _page(client, alice, "paging=1&size=2&page=3")
    assert last["next"] is None
    assert len(last["results"]) == 1  # type: ignore[arg-type]


async def test_next_is_null_when_the_page_ends_exactly(
    client: httpx.AsyncClient, alice: Caller
) -> None:
    await _create(client, alice, 4)
    assert (await _page(client, alice, "paging=1&size=2&page=2"))["next"] is None
    assert (await _page(client, alice, "paging=1&size=2&page=1"))["next"] is not None


async def test_page_past_the_end_is_empty_with_200(
    client: httpx.AsyncClient, alice: Caller
) -> None:
    await _create(client, alice, 3)
    for page in ("2", "99", "999999999999999999"):
        body = await _page(client, alice, f"paging=1&page={page}")
        assert body["results"] == []
        assert body["count"] == 3
        assert body["next"] is None
        assert body["previous"] is not None


@pytest.mark.parametrize(
    ("query", "page", "size"),
    [
        ("page=abc&size=xyz", 1, 10),
        ("page=0&size=0", 1, 10),
        ("page=-3&size=-1", 1, 10),
        ("page=1.5&size=2.5", 1, 10),
        ("page=&size=", 1, 10),
        ("size=1000", 1, 100),
        ("size=100", 1, 100),
        ("size=1&page=2", 2, 1),
    ],
)
async def test_junk_values_fall_back_and_size_is_clamped(
    client: httpx.AsyncClient, alice: Caller, query: str, page: int, size: int
) -> None:
    ids = await _create(client, alice, 3)
    body = await _page(client, alice, f"paging=1&{query}")
    expected = ids[(page - 1) * size : page * size]
    assert _ids(body["results"]) == expected
    nxt = body["next"]
    if page * size < 3:
        assert isinstance(nxt, str)
        assert parse_qs(urlsplit(nxt).query)["page"] == [str(page + 1)]


async def test_max_page_size_setting_is_honoured(
    client: httpx.AsyncClient, alice: Caller, app: object
) -> None:
    from fastapi import FastAPI

    assert isinstance(app, FastAPI)
    app.state.settings = app.state.settings.model_copy(update={"max_page_size": 2})
    await _create(client, alice, 3)
    body = await _page(client, alice, "paging=1&size=50")
    assert len(body["results"]) == 2  # type: ignore[arg-type]


async def test_forwarded_headers_from_a_trusted_proxy(
    client: httpx.AsyncClient, alice: Caller, app: object
) -> None:
    from fastapi import FastAPI

    assert isinstance(app, FastAPI)
    await _create(client, alice, 2)
    headers = {
        **alice.headers,
        "X-Forwarded-Proto": "https",
        "X-Forwarded-Host": "mask.example.org",
    }
    # ASGITransport's client is 127.0.0.1, which is trusted by default.
    response = await client.get(f"{BASE}?paging=1&size=1", headers=headers)
    assert response.json()["next"].startswith(f"https://mask.example.org{BASE}?")
    app.state.settings = app.state.settings.model_copy(update={"trusted_proxies": "10.9.9.9"})
    response = await client.get(f"{BASE}?paging=1&size=1", headers=headers)
    assert response.json()["next"].startswith(f"http://testserver{BASE}?")


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(query=st.dictionaries(st.sampled_from(["page", "size", "paging", "x", "page[]"]), st.text()))
async def test_no_query_string_makes_the_list_fail(
    client: httpx.AsyncClient, alice: Caller, query: dict[str, str]
) -> None:
    response = await client.get(BASE, params=query, headers=alice.headers)
    assert response.status_code == 200
    body = response.json()
    assert isinstance(body, list) or {"count", "next", "previous", "results"} == set(body)


async def test_raw_hostile_query_strings(client: httpx.AsyncClient, alice: Caller) -> None:
    hostile = [
        "%ff%fe=%00",
        "page=%00&paging=1",
        "paging=1&page=1&page=2&size=%F0%9F%92%A9",
        "&&&=",
        "paging=1&size=99999999999999999999999999",
        "paging=%31",
    ]
    for raw in hostile:
        response = await client.get(f"{BASE}?{raw}", headers=alice.headers)
        assert response.status_code == 200, raw
