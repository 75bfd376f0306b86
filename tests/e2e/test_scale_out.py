"""Many processes on one PostgreSQL and one Redis: two `serve --workers 2` and two `smtp`,
loaded together; then the same through PgBouncer in transaction pooling mode."""

from __future__ import annotations

import smtplib
import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from itertools import cycle
from pathlib import Path

import httpx
import pytest

from tests.e2e.load import concurrent_creates
from tests.pgbouncer import running_pgbouncer
from tests.sink import HOST, Sink
from tests.support import free_port, fresh_database, run_cli, running, wait_for_port

pytestmark = pytest.mark.slow
REDIS = "redis://127.0.0.1:6379/0"
RATE = 60  # per key and minute, across every process
LIMIT = 10  # addresses per user


@contextmanager
def fleet(env: dict[str, str], tmp: Path) -> Iterator[tuple[list[str], list[int]]]:
    """Two API servers of two workers each and two mail planes: their URLs and ports."""
    api_ports, smtp_ports = [free_port(), free_port()], [free_port(), free_port()]
    with ExitStack() as stack:
        for n, port in enumerate(api_ports):
            serve = ("serve", "--workers", "2", "--port", str(port))
            stack.enter_context(running(env, *serve, port=port, log=tmp / f"serve{n}.log"))
        for n, port in enumerate(smtp_ports):
            smtp = ("smtp", "--port", str(port))
            stack.enter_context(running(env, *smtp, port=port, log=tmp / f"smtp{n}.log"))
        for port in smtp_ports:
            wait_for_port(port)
        yield [f"http://{HOST}:{port}" for port in api_ports], smtp_ports


def cli_key(env: dict[str, str], mailbox: str) -> str:
    assert run_cli(env, "user", "add", mailbox).returncode == 0
    made = run_cli(env, "key", "create", mailbox)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def load_them_together(env: dict[str, str], tmp: Path, sink: Sink) -> None:
    assert run_cli(env, "db", "upgrade").returncode == 0
    racer, sender, limited = (cli_key(env, f"{n}@example.com") for n in ("racer", "mailer", "rl"))
    with fleet(env, tmp) as (apis, smtp_ports):
        # Creates racing through both API servers: the per-user limit holds across them.
        with ThreadPoolExecutor(4) as pool:
            bursts = [pool.submit(concurrent_creates, apis[n % 2], racer, 10) for n in range(4)]
            raced = [result for burst in bursts for result in burst.result()]
        assert Counter(status for status, _ in raced) == {200: LIMIT, 403: 40 - LIMIT}

        # Mail through both mail planes at once: every counter equals what the sink got.
        headers = {"Authorization": f"Bearer {sender}"}
        addresses = [
            httpx.post(f"{api}/v3/relay/addresses", headers=headers).json()["full_address"]
            for api in apis
            for _ in range(2)
        ]
        targets = list(zip(cycle(smtp_ports), addresses * 10, strict=False))[:40]

        def send(target: tuple[int, str]) -> None:
            port, rcpt = target
            note = f"From: a@example.net\r\nTo: {rcpt}\r\nSubject: hi\r\n\r\nhi\r\n".encode()
            with smtplib.SMTP(HOST, port, timeout=60) as client:
                client.sendmail("a@example.net", [rcpt], note)

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(send, targets))
        listed = httpx.get(f"{apis[1]}/v3/relay/addresses", headers=headers).json()
        forwarded = {item["full_address"]: item["num_forwarded"] for item in listed}
        received = Counter(
            line.split(": ", 1)[1]
            for message in sink.messages
            for line in message.data.decode().splitlines()
            if line.startswith("To: ")
        )
        assert sum(forwarded.values()) == len(sink.messages) == len(targets)
        assert forwarded == dict(received)

        # The per-key rate limit counts every process's requests together (Redis).
        statuses: list[int] = []
        lock = threading.Lock()

        def get(api: str) -> None:
            response = httpx.get(
                f"{api}/v3/relay/addresses", headers={"Authorization": f"Bearer {limited}"}
            )
            with lock:
                statuses.append(response.status_code)

        with ThreadPoolExecutor(6) as pool:
            list(pool.map(get, [apis[n % 2] for n in range(3 * RATE)]))
        served = statuses.count(200)
        assert set(statuses) == {200, 429}
        # A sliding window: at least the rate, and never more than one window's slack.
        assert RATE <= served <= 2 * RATE, served


def settings(url: str, sink: Sink, tmp: Path) -> dict[str, str]:
    return {
        "MASKMAIL_DATABASE_URL": url,
        "MASKMAIL_DATA_DIR": str(tmp / "var"),
        "MASKMAIL_DOMAIN": "relay.test",
        "MASKMAIL_SMARTHOST": f"{HOST}:{sink.port}",
        "MASKMAIL_REDIS_URL": REDIS,
        "MASKMAIL_RATE_LIMIT": f"{RATE}/minute",
        "MASKMAIL_MAX_ADDRESSES_PER_USER": str(LIMIT),
        "MASKMAIL_DB_POOL_SIZE": "4",
    }


def test_two_apis_and_two_mail_planes_on_one_postgresql(tmp_path: Path, sink: Sink) -> None:
    with fresh_database("postgres", tmp_path) as url:
        load_them_together(settings(url, sink, tmp_path), tmp_path, sink)


def test_the_same_through_pgbouncer_in_transaction_pooling(tmp_path: Path, sink: Sink) -> None:
    with fresh_database("postgres", tmp_path) as url, running_pgbouncer(url, tmp_path) as pooled:
        load_them_together(settings(pooled, sink, tmp_path), tmp_path, sink)
