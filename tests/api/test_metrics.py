"""GET /metrics: requests by route template and status, only for allowed clients."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from prometheus_client import REGISTRY

from maskmail.app import create_app
from tests.api.conftest import BASE, make_settings

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def client_from(url: str, peer: str, **settings: object) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(make_settings(url, **settings))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False, client=(peer, 4321))
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client


def requests_seen(method: str, route: str, status: str) -> float:
    labels = {"method": method, "route": route, "status": status}
    found = REGISTRY.get_sample_value("maskmail_http_request_duration_seconds_count", labels)
    return found or 0.0


async def test_requests_are_counted_by_template_and_status(database_url: str) -> None:
    templated = f"{BASE}/{{address_id}}"
    before = (
        requests_seen("GET", BASE, "401"),
        requests_seen("GET", templated, "401"),
        requests_seen("GET", "unmatched", "404"),
    )
    async with client_from(database_url, "127.0.0.1") as client:
        assert (await client.get(BASE)).status_code == 401  # a hot route
        for address_id in (1, 2, 3):
            assert (await client.get(f"{BASE}/{address_id}")).status_code == 401
        assert (await client.get("/wp-admin/setup.php")).status_code == 404
        scraped = await client.get("/metrics")
    after = (
        requests_seen("GET", BASE, "401"),
        requests_seen("GET", templated, "401"),
        requests_seen("GET", "unmatched", "404"),
    )
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 3, 1]
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain")
    assert "maskmail_http_request_duration_seconds_bucket{" in scraped.text
    assert "wp-admin" not in scraped.text and 'route="/v3/relay/addresses/1"' not in scraped.text
    assert "maskmail_db_pool_checked_out" in scraped.text


async def test_the_client_behind_a_trusted_proxy_decides(database_url: str) -> None:
    """The address the proxy forwards for is judged, as the rate limits judge it: the
    proxy's own loopback address opens nothing, and neither does a client that writes an
    allowed address into the header, nor a peer that is not a trusted proxy."""
    settings = {"trusted_proxies": "127.0.0.1,203.0.113.9"}
    async with client_from(database_url, "127.0.0.1", **settings) as client:
        outsider = await client.get("/metrics", headers={"X-Forwarded-For": "198.51.100.7"})
        spoofed = await client.get(
            "/metrics", headers={"X-Forwarded-For": "127.0.0.1, 198.51.100.7"}
        )
        direct = await client.get("/metrics")
    async with client_from(database_url, "203.0.113.9", **settings) as client:
        behind_balancer = await client.get(
            "/metrics", headers={"X-Forwarded-For": "198.51.100.7, 127.0.0.1"}
        )
    async with client_from(database_url, "192.0.2.9") as client:
        stranger = await client.get("/metrics", headers={"X-Forwarded-For": "127.0.0.1"})
    for refused in (outsider, spoofed, behind_balancer, stranger):
        assert refused.status_code == 403 and "maskmail_" not in refused.text
    assert direct.status_code == 200 and "maskmail_http_request" in direct.text


# Every spelling a client might send for the metrics path, with its extra headers.
SPELLINGS = [
    ("/metrics", {}),
    ("/metrics/", {}),
    ("//metrics", {}),
    ("/metrics//", {}),
    ("/metrics%2F", {}),
    ("/metrics%2f", {}),
    ("/%6Detrics", {}),
    ("/relay/metrics", {"X-Forwarded-Prefix": "/relay"}),
    ("/relay/metrics/", {"X-Forwarded-Prefix": "/relay/"}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("path", "headers"), SPELLINGS)
async def test_every_spelling_of_the_path_is_judged_alike(
    database_url: str, path: str, headers: dict[str, str]
) -> None:
    """Whatever spelling routing serves as the metrics is allowed and refused as
    /metrics is: the check is in the route, after the path is made canonical."""
    async with client_from(database_url, "127.0.0.1") as client:
        url = f"http://testserver{path}"
        local = await client.get(url, headers=headers)
        forwarded = await client.get(url, headers={**headers, "X-Forwarded-For": "198.51.100.7"})
    assert local.status_code == 200 and "maskmail_http_request" in local.text
    assert forwarded.status_code == 403 and "maskmail_" not in forwarded.text


async def test_other_cases_are_not_the_metrics(database_url: str) -> None:
    async with client_from(database_url, "127.0.0.1") as client:
        for path in ("/METRICS", "/Metrics/", "/metrics.txt", "/metrics/x"):
            answer = await client.get(path)
            assert answer.status_code == 404 and "maskmail_" not in answer.text, path


@pytest.mark.parametrize(
    ("peer", "allow", "status"),
    [
        ("203.0.113.9", None, 403),
        ("::1", None, 200),
        ("203.0.113.9", "203.0.113.0/24", 200),
        ("127.0.0.1", "10.0.0.0/8", 403),
    ],
)
async def test_metrics_only_for_allowed_clients(
    database_url: str, peer: str, allow: str | None, status: int
) -> None:
    settings = {} if allow is None else {"metrics_allow": allow}
    async with client_from(database_url, peer, **settings) as client:
        response = await client.get("/metrics")
    assert response.status_code == status
    if status == 403:
        assert response.json()["code"] == "forbidden"
        assert "maskmail_" not in response.text
