"""uvicorn's HTTP protocol with a cap on the size of a request's head.

httptools has no limit of its own and gathers a header that arrives in pieces by
copying it whole for every piece, so one 100 MB header held the event loop, API and
SMTP both, for seconds. The head (request line and headers) is counted as it arrives,
and past ``MAX_HEAD_BYTES`` the connection gets a 431 and is closed.
"""

from __future__ import annotations

import asyncio

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

# Far above any real client's head (browsers stay under 16 KiB), far below a stall.
MAX_HEAD_BYTES = 32 * 1024
_BODY = orjson.dumps(
    {
        "code": "headers_too_large",
        "message": f"the request's headers are over {MAX_HEAD_BYTES} bytes",
        "details": {},
    }
)
TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
    b"content-type: application/json\r\n"
    b"content-length: " + str(len(_BODY)).encode() + b"\r\n"
    b"connection: close\r\n\r\n" + _BODY
)


class HeadTooLarge(Exception):
    """Raised from the parser's callback: httptools stops and uvicorn answers 400."""


class CappedHttpTools(HttpToolsProtocol):
    """Counts each request's head as its bytes arrive, and measures it exactly once the
    parser has it whole (it may have come in one read with its body)."""

    _head_bytes = 0
    _in_head = True
    _too_large = False

    def on_headers_complete(self) -> None:
        self._in_head = False
        size = len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)
        if size > MAX_HEAD_BYTES:
            self._too_large = True
            raise HeadTooLarge
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        if self._too_large:
            self._refuse()
            return
        super().send_400_response(msg)

    def _refuse(self) -> None:
        transport: asyncio.Transport = self.transport
        if not transport.is_closing():
            transport.write(TOO_LARGE)
            transport.close()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head = True
        self._head_bytes = 0

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._head_bytes > MAX_HEAD_BYTES:
            self._refuse()
