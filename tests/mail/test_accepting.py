"""The acceptor the workers of ``smtp --workers`` share a listening socket with: a burst
of connections spreads over them, none waits for ever, and closing stops the taking."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest

from maskmail.mail import accepting
from maskmail.mail.accepting import SharedAcceptor

pytestmark = pytest.mark.anyio

HOST = "127.0.0.1"


class Held(asyncio.Protocol):
    """Counts its worker's open connections, as the SMTP server's gate does."""

    def __init__(self, count: list[int]) -> None:
        self.count = count

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.count[0] += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self.count[0] -= 1


def factory(count: list[int]) -> Callable[[], asyncio.Protocol]:
    return lambda: Held(count)


def held_by(count: list[int]) -> Callable[[], int]:
    return lambda: count[0]


@asynccontextmanager
async def listening() -> AsyncIterator[socket.socket]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((HOST, 0))
    sock.listen(128)
    try:
        yield sock
    finally:
        sock.close()


async def until(check: Callable[[], bool]) -> None:
    async with asyncio.timeout(10):
        while not check():
            await asyncio.sleep(0.005)


async def connect_all(port: int, n: int) -> list[asyncio.StreamWriter]:
    opened = await asyncio.gather(*(asyncio.open_connection(HOST, port) for _ in range(n)))
    return [writer for _, writer in opened]


async def close_all(writers: list[asyncio.StreamWriter]) -> None:
    for writer in writers:
        writer.close()
    for writer in writers:
        await writer.wait_closed()


async def test_a_burst_of_connections_spreads_over_the_workers_sharing_the_socket() -> None:
    async with listening() as sock:
        # Two workers as a fork makes them: each its own descriptor of the one socket.
        counts = [[0], [0]]
        workers = [SharedAcceptor(sock.dup(), factory(count), held_by(count)) for count in counts]
        writers = await connect_all(sock.getsockname()[1], 8)
        await until(lambda: counts[0][0] + counts[1][0] == 8)
        held = sorted(count[0] for count in counts)
        for worker in workers:
            worker.close()
        await close_all(writers)
    # The loop's own server gave one of them all eight.
    assert held[0] >= 3, held


async def test_a_worker_that_holds_many_still_takes_a_connection_nobody_else_takes() -> None:
    async with listening() as sock:
        count = [0]
        worker = SharedAcceptor(sock.dup(), factory(count), lambda: 1_000 + count[0])
        writers = await connect_all(sock.getsockname()[1], 3)
        await until(lambda: count[0] == 3)
        worker.close()
        await close_all(writers)


async def test_a_closed_acceptor_takes_no_more_and_its_sessions_go_on() -> None:
    async with listening() as sock:
        port = sock.getsockname()[1]
        count = [0]
        worker = SharedAcceptor(sock.dup(), factory(count), lambda: count[0])
        first = await connect_all(port, 1)
        await until(lambda: count[0] == 1)
        worker.close()
        await worker.wait_closed()
        late = await connect_all(port, 1)  # queued by the kernel on the still-open socket
        await asyncio.sleep(0.05)
        assert count[0] == 1
        await close_all(first + late)
        await until(lambda: count[0] == 0)


class FailingOnce:
    """A listening socket whose first accept fails as when the process is out of files."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.failed = False

    def fileno(self) -> int:
        return self.sock.fileno()

    def setblocking(self, flag: bool) -> None:
        self.sock.setblocking(flag)

    def accept(self) -> tuple[socket.socket, object]:
        if not self.failed:
            self.failed = True
            raise OSError(errno.EMFILE, "Too many open files")
        return self.sock.accept()

    def close(self) -> None:
        self.sock.close()


async def test_running_out_of_files_pauses_accepting_then_it_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(accepting, "PAUSE_AFTER_FAILURE", 0.05)
    async with listening() as sock:
        count = [0]
        failing = FailingOnce(sock.dup())
        with caplog.at_level(logging.WARNING, logger="maskmail"):
            worker = SharedAcceptor(failing, factory(count), lambda: count[0])  # type: ignore[arg-type]
            writers = await connect_all(sock.getsockname()[1], 1)
            await until(lambda: count[0] == 1)
        assert failing.failed
        assert "could not accept a connection" in caplog.text
        worker.close()
        await close_all(writers)
