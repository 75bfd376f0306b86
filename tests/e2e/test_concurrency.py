"""Concurrent creates from several client processes against several server processes."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

import httpx
import pytest

from tests.e2e.conftest import Deployment
from tests.e2e.load import concurrent_creates
from tests.support import free_port, running

pytestmark = pytest.mark.slow
CLIENTS = 4


def _burst(base_url: str, key: str, total: int) -> list[tuple[int, str]]:
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=CLIENTS, mp_context=context) as pool:
        futures = [
            pool.submit(concurrent_creates, base_url, key, total // CLIENTS) for _ in range(CLIENTS)
        ]
        return [result for future in futures for result in future.result()]


def _listed(base_url: str, key: str) -> list[str]:
    response = httpx.get(
        f"{base_url}/v3/relay/addresses", headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
    assert response.status_code == 200
    return [item["full_address"] for item in response.json()]


def test_200_concurrent_creates_give_200_distinct_addresses(deployment: Deployment) -> None:
    key = deployment.user_with_key("many@example.com")
    port = free_port()
    with running(
        deployment.env, "serve", "--port", str(port), "--workers", "2",
        port=port, log=deployment.tmp / "serve.log",
    ):  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        results = _burst(base, key, 200)
        assert Counter(status for status, _ in results) == {200: 200}
        made = [address for _, address in results]
        assert len(set(made)) == 200
        assert sorted(_listed(base, key)) == sorted(made)


def test_limit_of_50_holds_under_200_concurrent_attempts(deployment: Deployment) -> None:
    key = deployment.user_with_key("limited@example.com")
    env = {**deployment.env, "MASKMAIL_MAX_ADDRESSES_PER_USER": "50"}
    port = free_port()
    with running(
        env, "serve", "--port", str(port), "--workers", "2",
        port=port, log=deployment.tmp / "serve.log",
    ):  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        results = _burst(base, key, 200)
        assert Counter(status for status, _ in results) == {200: 50, 403: 150}
        assert {code for status, code in results if status == 403} == {"address_limit_reached"}
        created = {address for status, address in results if status == 200}
        assert len(created) == 50
        assert set(_listed(base, key)) == created
