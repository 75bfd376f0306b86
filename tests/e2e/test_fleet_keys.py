"""Keys and rate limits across several API processes on one PostgreSQL and one Redis:
a revoked key fails on the very next request in every process, and a limit of L gives
exactly L successes whichever processes the requests reach."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import base_env
from tests.e2e.test_scale_out import REDIS, cli_key
from tests.support import free_port, fresh_database, run_cli, running

pytestmark = pytest.mark.slow
PROCESSES = 3  # separate `serve` processes, each on its own port
LIMIT = 25  # requests per key and day: no window boundary falls inside the test
BASE = "/v3/relay/addresses"
# A hot route (page GET and POST), an ordinary FastAPI route, and a compatibility one.
KEYED = (
    ("GET", f"{BASE}?paging=1", "Authorization", "Bearer {key}"),
    ("POST", BASE, "Authorization", "Bearer {key}"),
    ("GET", f"{BASE}/1", "Authorization", "Bearer {key}"),  # the first POST made it
    ("GET", "/api/user_info", "Authentication", "{key}"),
)


@contextmanager
def api_fleet(env: dict[str, str], tmp: Path) -> Iterator[list[str]]:
    """``PROCESSES`` API servers of one worker each, and one of two workers: their URLs."""
    ports = [free_port() for _ in range(PROCESSES + 1)]
    with ExitStack() as stack:
        for n, port in enumerate(ports):
            workers = "2" if n == PROCESSES else "1"
            serve = ("serve", "--workers", workers, "--port", str(port))
            stack.enter_context(running(env, *serve, port=port, log=tmp / f"serve{n}.log"))
        yield [f"http://127.0.0.1:{port}" for port in ports]


def status(base: str, method: str, path: str, header: str, value: str) -> int:
    # A fresh connection per request, so that the two-worker server's requests reach
    # either of its workers.
    response = httpx.request(method, base + path, headers={header: value}, timeout=30)
    return response.status_code


def every_route_on_every_process(apis: list[str], key: str) -> list[int]:
    return [
        status(base, method, path, header, value.format(key=key))
        for base in apis
        for method, path, header, value in KEYED
        for _ in range(2)  # twice, for either worker
    ]


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    with fresh_database("postgres", tmp_path) as url:
        settings = {
            **base_env(url, tmp_path),
            "MASKMAIL_REDIS_URL": REDIS,
            "MASKMAIL_RATE_LIMIT": f"{LIMIT}/day",
            "MASKMAIL_DB_POOL_SIZE": "4",
        }
        assert run_cli(settings, "db", "upgrade").returncode == 0
        yield settings


def test_a_revoked_key_fails_on_the_next_request_in_every_process(
    env: dict[str, str], tmp_path: Path
) -> None:
    unlimited = {**env, "MASKMAIL_RATE_LIMIT": "100000/minute"}
    key = cli_key(unlimited, "revoked@example.com")
    with api_fleet(unlimited, tmp_path) as apis:
        # Every process has served the key, on every route, just before it is revoked.
        before = every_route_on_every_process(apis, key)
        assert before == [200] * len(before), before
        revoked = run_cli(unlimited, "key", "revoke", key)
        assert revoked.returncode == 0, revoked.stderr
        after = every_route_on_every_process(apis, key)
    assert after == [401] * len(after)


def test_a_limit_holds_exactly_across_processes(env: dict[str, str], tmp_path: Path) -> None:
    key = cli_key(env, "limited@example.com")
    path, header = f"{BASE}?paging=1", {"Authorization": f"Bearer {key}"}
    with api_fleet(env, tmp_path) as apis:
        targets = [apis[n % len(apis)] for n in range(3 * LIMIT)]
        with ThreadPoolExecutor(8) as pool:
            statuses = list(
                pool.map(lambda base: httpx.get(base + path, headers=header).status_code, targets)
            )
    assert Counter(statuses) == {200: LIMIT, 429: 2 * LIMIT}
