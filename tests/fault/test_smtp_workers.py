"""`maskmail smtp --workers 2` with one worker killed (SIGKILL) while mail flows: the
parent starts another, and nothing that got its 250 is lost, doubled or miscounted."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.e2e.conftest import Deployment
from tests.fault.mailload import (
    NO_ANSWER,
    Letter,
    attempt,
    create_addresses,
    forwarded_counts,
    letter,
    retry_until_accepted,
    tags_in,
)
from tests.fault.procs import rss_bytes, wait_until
from tests.fault.test_crash import assert_counts_honest, crash_env
from tests.sink import Sink
from tests.support import free_port, maskmail_cmd, running, wait_for_port

pytestmark = pytest.mark.slow

SENDERS = 16
# Letters acknowledged before the kill, and again after it: the kill lands mid-load, and
# the load goes on through the surviving and the new worker.
KILL_AFTER = 40
AFTER_KILL = 40
RETRY_BUDGET = 120.0
# Every process of the mail plane, the parent and each worker, stays under this.
RSS_LIMIT = 150 * 1024 * 1024


def workers_of(parent: subprocess.Popen[bytes]) -> list[int]:
    """The worker pids of a running `smtp --workers` parent."""
    path = Path(f"/proc/{parent.pid}/task/{parent.pid}/children")
    return [int(pid) for pid in path.read_text().split()]


@contextmanager
def smtp_workers(env: dict[str, str], log: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    command = maskmail_cmd("smtp", "--workers", "2", "--port", str(port))
    with log.open("ab") as out:
        proc = subprocess.Popen(
            command, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        wait_for_port(port, proc)
        wait_until(lambda: len(workers_of(proc)) == 2, 30, "two workers")
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def mail_through_a_kill(port: int, rcpts: list[str], victim: int) -> list[Letter]:
    """Letters sent by SENDERS until AFTER_KILL more were accepted after SIGKILL of ``victim``."""
    letters: list[Letter] = []
    stop = asyncio.Event()

    async def sends() -> None:
        while not stop.is_set():
            item = letter(rcpts[len(letters) % len(rcpts)])
            letters.append(item)
            code = await attempt(port, item)
            assert code in (250, NO_ANSWER) or 400 <= code < 500, code

    def accepted() -> int:
        return sum(item.accepted for item in letters)

    tasks = [asyncio.create_task(sends()) for _ in range(SENDERS)]
    try:
        while accepted() < KILL_AFTER:
            assert not any(task.done() for task in tasks), "a sender stopped before the kill"
            await asyncio.sleep(0.01)
        os.kill(victim, signal.SIGKILL)
        target = accepted() + AFTER_KILL
        while accepted() < target:
            assert not any(task.done() for task in tasks), "a sender stopped after the kill"
            await asyncio.sleep(0.01)
    finally:
        stop.set()
        await asyncio.gather(*tasks)
    return letters


async def retry(port: int, held: list[Letter]) -> None:
    deadline = asyncio.get_running_loop().time() + RETRY_BUDGET
    await retry_until_accepted(port, held, deadline)


def test_a_killed_worker_loses_no_mail(deployment: Deployment, sink: Sink) -> None:
    env = crash_env(deployment, sink)
    key = deployment.user_with_key("workers@example.com")
    api_port, smtp_port = free_port(), free_port()
    serve = ("serve", "--port", str(api_port))
    with (
        running(env, *serve, port=api_port, log=deployment.tmp / "serve.log"),
        smtp_workers(env, deployment.tmp / "smtp.log", smtp_port) as parent,
    ):
        api_url = f"http://127.0.0.1:{api_port}"
        addresses = asyncio.run(create_addresses(api_url, key, 4))
        [victim, survivor] = workers_of(parent)
        letters = asyncio.run(mail_through_a_kill(smtp_port, list(addresses.values()), victim))

        # The parent replaced the killed worker; the other one was left alone.
        wait_until(lambda: len(workers_of(parent)) == 2, 30, "a new worker")
        now = workers_of(parent)
        assert victim not in now
        assert survivor in now
        for pid in [parent.pid, *now]:
            assert rss_bytes(pid) < RSS_LIMIT, pid

        # A 250 was given only for a letter delivered, and each such letter arrived once.
        arrived = tags_in(sink.messages)
        accepted = [item for item in letters if item.accepted]
        assert len(accepted) >= KILL_AFTER + AFTER_KILL
        assert all(arrived[item.tag] == 1 for item in accepted)
        counted = asyncio.run(forwarded_counts(api_url, key, addresses))
        assert_counts_honest(addresses, letters, arrived, counted)

        # What got no 250 is retried, as sending MTAs do, and then arrives too.
        held = [item for item in letters if not item.accepted]
        # The kill cut sessions short: both workers were taking mail.
        assert held
        asyncio.run(retry(smtp_port, held))
        arrived = tags_in(sink.messages)
        assert all(arrived[item.tag] >= 1 for item in letters)
        counted = asyncio.run(forwarded_counts(api_url, key, addresses))
        assert_counts_honest(addresses, letters, arrived, counted)
