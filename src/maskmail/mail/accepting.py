"""Accepting on a listening socket that the workers of ``smtp --workers`` share, so that
their connections spread over them.

The event loop's own server takes every connection waiting when the socket becomes
readable: the worker that wakes first takes a whole burst (a client opening eight
connections at once gets one worker for all eight), and its siblings idle while it
serves them. Here a worker takes one connection at a time, and one that holds some
waits a moment before it takes the next, the longer the more it holds: the sibling that
holds fewest gets there first. The wait is bounded, so a waiting connection is taken
within ``MAX_DEFER`` even when every sibling is busy, stuck or gone.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from collections.abc import Callable

log = logging.getLogger("maskmail")

# Seconds a worker waits, per connection it holds, before it takes another; and at most.
DEFER_PER_CONNECTION = 0.0005
MAX_DEFER = 0.005
# After a failure that is the worker's own (out of file descriptors, of memory), the
# seconds it stops accepting, as the event loop's server does; a sibling may have room.
PAUSE_AFTER_FAILURE = 1.0
# Failures that end one connection (the client gave up before it was taken), not the
# worker's accepting.
_CLIENT_GONE = frozenset({errno.ECONNABORTED, errno.EPROTO, errno.ECONNRESET})


class SharedAcceptor:
    """Takes the connections of ``sock`` for ``factory``'s protocols, one at a time, later
    the more of them ``held`` says are open."""

    def __init__(
        self,
        sock: socket.socket,
        factory: Callable[[], asyncio.Protocol],
        held: Callable[[], int],
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._sock = sock
        self._factory = factory
        self._held = held
        self._fd = sock.fileno()
        self._later: asyncio.TimerHandle | None = None
        self._starting: set[asyncio.Task[None]] = set()
        self._closed = False
        sock.setblocking(False)
        self._loop.add_reader(self._fd, self._readable)

    def _readable(self) -> None:
        # A connection taken is counted by its protocol only once it starts.
        held = self._held() + len(self._starting)
        if not held:
            self._take_one()
            return
        self._loop.remove_reader(self._fd)
        delay = min(held * DEFER_PER_CONNECTION, MAX_DEFER)
        self._later = self._loop.call_later(delay, self._after_wait)

    def _after_wait(self) -> None:
        self._later = None
        if self._closed:
            return
        self._take_one()
        if not self._closed and self._later is None:
            self._loop.add_reader(self._fd, self._readable)

    def _take_one(self) -> None:
        try:
            conn, _ = self._sock.accept()
        except (BlockingIOError, InterruptedError):
            return  # a sibling took it
        except OSError as exc:
            if exc.errno in _CLIENT_GONE:
                return
            log.warning("SMTP: could not accept a connection (%s); pausing", exc.strerror)
            self._loop.remove_reader(self._fd)
            self._later = self._loop.call_later(PAUSE_AFTER_FAILURE, self._resume)
            return
        conn.setblocking(False)
        task = self._loop.create_task(self._start(conn))
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)

    def _resume(self) -> None:
        self._later = None
        if not self._closed:
            self._loop.add_reader(self._fd, self._readable)

    async def _start(self, conn: socket.socket) -> None:
        try:
            await self._loop.connect_accepted_socket(self._factory, conn)
        except OSError:
            conn.close()  # the client went away while it was being set up

    def close(self) -> None:
        """Stop accepting; the sessions taken go on. The socket is this process's copy."""
        if self._closed:
            return
        self._closed = True
        if self._later is not None:
            self._later.cancel()
            self._later = None
        self._loop.remove_reader(self._fd)
        self._sock.close()

    async def wait_closed(self) -> None:
        """Wait for connections taken but not yet handed to their protocol."""
        if self._starting:
            await asyncio.wait(set(self._starting))
