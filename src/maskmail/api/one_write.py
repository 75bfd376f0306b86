"""A response's head and its body leave in one write, not two.

uvicorn writes the status line and headers when the app starts its answer, and the body
when it sends it: two writes, so two ``send`` system calls and two TCP segments for
every answer, however small. py-spy put the first of them at about a fifth of a page
request's time. Here the cycle that answers one request writes through ``HeadWithBody``,
which holds the head back until the body's first bytes, or until the answer is complete
or the connection is closed, whichever comes first. Nothing else changes: an interim
``100 Continue`` goes out at once, and a streamed body's later parts are written as they
come.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

from maskmail.api.headcap import CappedHttpTools

# uvicorn's status line starts every head; an interim (1xx) one is not held.
_HEAD = b"HTTP/1.1 "
_INTERIM = b"HTTP/1.1 1"


class HeadWithBody:
    """The connection's transport as one response's cycle sees it: what uvicorn's cycle
    calls of it (``write``, ``close``, ``is_closing``), with the head held back."""

    __slots__ = ("_head", "_transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._head: bytes | None = None

    def write(self, data: bytes) -> None:
        if self._head is not None:
            data, self._head = self._head + data, None
        elif data.startswith(_HEAD) and not data.startswith(_INTERIM):
            self._head = data
            return
        self._transport.write(data)

    def flush(self) -> None:
        """Write a head still held: an answer without body bytes (HEAD, 204, 304)."""
        if self._head is not None:
            head, self._head = self._head, None
            self._transport.write(head)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()


def write_once(cycle: RequestResponseCycle) -> None:
    """Make ``cycle`` write its head with its body; it flushes when its answer is done."""
    transport = HeadWithBody(cycle.transport)
    cycle.transport = transport  # type: ignore[assignment]
    answered: Callable[[], None] = cycle.on_response

    def on_response() -> None:
        transport.flush()
        answered()

    cycle.on_response = on_response


class OneWriteHttpTools(CappedHttpTools):
    """The protocol every maskmail process serves HTTP with: the head cap
    (``api/headcap.py``), and each answer's head written with its body."""

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        write_once(self.cycle)
