"""The list endpoint's bodies: a page, or the full array streamed in chunks.

The database writes each address's JSON (store/listing.py); these functions only join
the pieces, so the bytes are built without a dict per address. A list longer than one
chunk is streamed: the server's memory does not grow with the list.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
from starlette.responses import Response, StreamingResponse

from maskmail.api.memo import Link
from maskmail.core.paging import PageRequest, has_next
from maskmail.store import listing
from maskmail.store.driver import DriverPool

JSON = "application/json"
# Addresses per statement of the full listing; a list shorter than this is one statement
# and one body, a longer one is streamed chunk by chunk.
CHUNK = 2000
# Past any real count; keeps (page - 1) * size inside a 64-bit integer.
MAX_OFFSET = 2**62


def _array(items: bytes) -> bytes:
    return b"[%b]" % items


def page_body(found: listing.Page, want: PageRequest, link: Link) -> Response:
    """The page wrapper, with the links to the pages before and after this one."""
    following = link(want.page + 1) if has_next(want, found.count) else None
    previous = link(want.page - 1) if want.page > 1 else None
    body = b'{"count":%d,"next":%b,"previous":%b,"results":%b}' % (
        found.count,
        orjson.dumps(following),
        orjson.dumps(previous),
        _array(found.items),
    )
    return Response(body, media_type=JSON)


def full_body(first: listing.Chunk, drivers: DriverPool) -> Response:
    """All addresses, oldest first: one body when they fit in a chunk, else a stream."""
    if first.size < CHUNK:
        return Response(_array(first.items), media_type=JSON)
    return StreamingResponse(_stream(drivers, first), media_type=JSON)


async def _stream(drivers: DriverPool, first: listing.Chunk) -> AsyncIterator[bytes]:
    """Each chunk is its own statement on a connection held only while it runs, so a slow
    client holds no connection; an address created meanwhile appears if it is newer than
    the last one sent (ids only grow), and none appears twice."""
    yield b"[" + first.items
    chunk = first
    while chunk.size == CHUNK:
        chunk = await drivers.run(
            listing.next_chunk(chunk.user_id, chunk.last_id, CHUNK), bulk=True
        )
        if chunk.size:
            yield b"," + chunk.items
    yield b"]"
