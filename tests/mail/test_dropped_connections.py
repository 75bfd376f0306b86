"""A connection dropped in any state gives its connection places back at once (issue 21).

A port scanner, a load balancer's TCP check or ``nc -z`` connects and closes without a
word; a client may die mid-session or reset the connection. None of them may hold a
place until the idle timeout, or a handful of packets would shut everyone out. The
mail plane runs on uvloop (runner.run_loop), so the tests run on both loops.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import struct
import time
from collections.abc import Callable

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.mail.conftest import HOST, Masks
from tests.mail.test_server import bare_server

IDLE = 60.0  # a leaked place would be held this long: far past every wait below
LIMIT = 3

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "uvloop"])
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, bool]]:
    return "asyncio", {"use_uvloop": request.param == "uvloop"}


def _reset(sock: socket.socket) -> None:
    """Close with an RST instead of a FIN (SO_LINGER with a zero timeout)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def _read_reply(sock: socket.socket) -> bytes:
    """One whole reply, multi-line or not (or what came before the server closed)."""
    data = b""
    while chunk := sock.recv(4096):
        data += chunk
        last = data.rsplit(b"\r\n", 2)
        if data.endswith(b"\r\n") and last[-2][3:4] == b" ":
            break
    return data


def _drops(port: int, recipient: str, source: str) -> dict[str, Callable[[], None]]:
    """A connection dropped in each state a client can leave it in."""

    def connect() -> socket.socket:
        return socket.create_connection((HOST, port), timeout=10, source_address=(source, 0))

    def before_greeting(close: Callable[[socket.socket], None]) -> None:
        close(connect())

    def after_greeting(close: Callable[[socket.socket], None]) -> None:
        sock = connect()
        _read_reply(sock)
        close(sock)

    def after_ehlo(close: Callable[[socket.socket], None]) -> None:
        sock = connect()
        _read_reply(sock)
        sock.sendall(b"EHLO client.example.com\r\n")
        _read_reply(sock)
        close(sock)

    def mid_command(close: Callable[[socket.socket], None]) -> None:
        sock = connect()
        _read_reply(sock)
        sock.sendall(b"EHLO client.example.com\r\nMAIL FROM:<a@exa")
        close(sock)

    def mid_data(close: Callable[[socket.socket], None]) -> None:
        sock = connect()
        _read_reply(sock)
        for line in (
            b"EHLO client.example.com",
            b"MAIL FROM:<alice@example.com>",
            f"RCPT TO:<{recipient}>".encode(),
            b"DATA",
        ):
            sock.sendall(line + b"\r\n")
            _read_reply(sock)
        sock.sendall(b"Subject: cut short\r\n\r\nHalf a mess")
        close(sock)

    def half_closed(close: Callable[[socket.socket], None]) -> None:
        sock = connect()
        sock.shutdown(socket.SHUT_WR)
        close(sock)

    states = {
        "before_greeting": before_greeting,
        "after_greeting": after_greeting,
        "after_ehlo": after_ehlo,
        "mid_command": mid_command,
        "mid_data": mid_data,
        "half_closed": half_closed,
    }
    closes: dict[str, Callable[[socket.socket], None]] = {
        "fin": socket.socket.close,
        "rst": _reset,
    }
    return {
        f"{state}/{how}": functools.partial(drop, close)
        for state, drop in states.items()
        for how, close in closes.items()
    }


def _session(port: int, source: str = HOST) -> bytes:
    """One whole session (banner, EHLO, NOOP, QUIT); returns the banner line.

    A place freed by the previous session's QUIT may come back a moment after the client
    saw the close, so a 421 is tried again for up to a second (a leak lasts a minute)."""
    deadline = time.monotonic() + 1.0
    while True:
        with socket.create_connection((HOST, port), timeout=10, source_address=(source, 0)) as s:
            banner = _read_reply(s)
            if banner.startswith(b"421") and time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            if not banner.startswith(b"220 "):
                return banner
            for line in (b"EHLO client.example.com", b"NOOP", b"QUIT"):
                s.sendall(line + b"\r\n")
                assert _read_reply(s)[:1] == b"2", line
            while s.recv(4096):
                pass
            return banner


def _drop_all_then_serve(port: int, recipient: str, sources: list[str]) -> dict[str, bytes]:
    """Each kind of drop, more times than the limit, then one session each; then 50
    sessions. Returns the banner each session after a kind of drop got."""
    banners: dict[str, bytes] = {}
    for name in _drops(port, recipient, sources[0]):
        for i in range(LIMIT + 1):
            # A server that leaks places turns these away with a 421 and a close.
            with contextlib.suppress(OSError):
                _drops(port, recipient, sources[i % len(sources)])[name]()
        banners[name] = _session(port)
    banners.update({f"session {n}": _session(port) for n in range(50)})
    return banners


@pytest.mark.parametrize(
    ("max_connections", "max_per_client", "sources"),
    [
        pytest.param(100, LIMIT, [HOST], id="per-client"),
        pytest.param(LIMIT, 100, [HOST, "127.0.0.2", "127.0.0.3"], id="global"),
    ],
)
async def test_dropped_connections_free_their_places_at_once(
    relay_engine: AsyncEngine,
    masks: Masks,
    max_connections: int,
    max_per_client: int,
    sources: list[str],
) -> None:
    mask = await masks.make()
    async with bare_server(
        relay_engine,
        max_connections=max_connections,
        max_per_client=max_per_client,
        idle_timeout=IDLE,
    ) as port:
        banners = await asyncio.to_thread(_drop_all_then_serve, port, mask.address, sources)
    refused = {name: banner for name, banner in banners.items() if not banner.startswith(b"220 ")}
    assert refused == {}
    assert len(banners) == 12 + 50
