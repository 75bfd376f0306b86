"""A TCP proxy on loopback that can turn into a black hole: it stops forwarding in both
directions without closing anything, as a database behind a dead network path looks."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from tests.support import free_port


class BlackHole:
    """Forwards ``127.0.0.1:port`` to ``upstream`` until :meth:`swallow`, again after
    :meth:`release`; connections opened meanwhile are accepted and left hanging."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = free_port()
        self._loop = asyncio.new_event_loop()
        self._open = asyncio.Event()
        self._thread = threading.Thread(target=self._run, name="blackhole", daemon=True)
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None

    def swallow(self) -> None:
        self._loop.call_soon_threadsafe(self._open.clear)

    def release(self) -> None:
        self._loop.call_soon_threadsafe(self._open.set)

    def _run(self) -> None:
        self._loop.run_until_complete(self._serve())
        self._loop.close()

    async def _serve(self) -> None:
        self._open.set()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._client, "127.0.0.1", self.port)
        self._ready.set()
        async with server:
            await self._stop.wait()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self._open.wait()
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        await asyncio.gather(
            self._pipe(reader, up_writer), self._pipe(up_reader, writer), return_exceptions=True
        )

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                await self._open.wait()
                data = await reader.read(65536)
                if not data:
                    break
                await self._open.wait()
                writer.write(data)
                await writer.drain()
        finally:
            with suppress(OSError):
                writer.close()

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(10)

    def stop(self) -> None:
        stop = self._stop
        if stop is not None:
            self._loop.call_soon_threadsafe(stop.set)
        self._thread.join(10)


@contextmanager
def black_hole(upstream: tuple[str, int]) -> Iterator[BlackHole]:
    hole = BlackHole(upstream)
    hole.start()
    try:
        yield hole
    finally:
        hole.release()
        hole.stop()
