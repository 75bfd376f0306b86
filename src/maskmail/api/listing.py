"""The list endpoint's bodies: a page, or the full array streamed in chunks.

The database writes each address's JSON (store/wire.py); these functions only join the
pieces, so the bytes are built without a dict per address. A list longer than one chunk
is streamed: the server's memory does not grow with the list.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from functools import lru_cache
from types import MappingProxyType
from urllib.parse import parse_qsl

import orjson
from fastapi import Request
from starlette.responses import Response, StreamingResponse

from maskmail.api.deps import refuse_unknown_key
from maskmail.api.urls import links_for
from maskmail.config import Settings
from maskmail.core import paging
from maskmail.store import wire
from maskmail.store.raw import RawSource

JSON = "application/json"
# Addresses per statement of the full listing; a list shorter than this is one statement
# and one body, a longer one is streamed chunk by chunk.
CHUNK = 2000
# Past any real count; keeps (page - 1) * size inside a 64-bit integer.
MAX_OFFSET = 2**62


@lru_cache(maxsize=1024)
def _parsed(raw: bytes) -> Mapping[str, str]:
    return MappingProxyType(dict(parse_qsl(raw.decode("latin-1"), keep_blank_values=True)))


def query_of(request: Request) -> Mapping[str, str]:
    """The query's values, the last of a repeated name winning, as in Starlette's
    ``query_params``; parsed once per distinct query string, since clients repeat theirs."""
    return _parsed(request.scope["query_string"])


def _array(items: bytes) -> bytes:
    return b"[%b]" % items


async def page_body(request: Request, key_hash: str, settings: Settings) -> Response:
    query = query_of(request)
    want = paging.page_request(query.get("page"), query.get("size"), settings.max_page_size)
    source: RawSource = request.app.state.raw
    async with source() as raw:
        found = await wire.page(raw, key_hash, offset=min(want.offset, MAX_OFFSET), limit=want.size)
    if found is None:
        await refuse_unknown_key(request)
    link = links_for(request, settings)
    following = link(want.page + 1) if paging.has_next(want, found.count) else None
    previous = link(want.page - 1) if want.page > 1 else None
    body = b'{"count":%d,"next":%b,"previous":%b,"results":%b}' % (
        found.count,
        orjson.dumps(following),
        orjson.dumps(previous),
        _array(found.items),
    )
    return Response(body, media_type=JSON)


async def full_body(request: Request, key_hash: str) -> Response:
    """All addresses, oldest first: one body when they fit in a chunk, else a stream."""
    source: RawSource = request.app.state.raw
    async with source() as raw:
        first = await wire.first_chunk(raw, key_hash, CHUNK)
    if first is None:
        await refuse_unknown_key(request)
    if first.size < CHUNK:
        return Response(_array(first.items), media_type=JSON)
    return StreamingResponse(_stream(source, first), media_type=JSON)


async def _stream(source: RawSource, first: wire.Chunk) -> AsyncIterator[bytes]:
    """Each chunk is its own statement on a connection held only while it runs, so a slow
    client holds no connection; an address created meanwhile appears if it is newer than
    the last one sent (ids only grow), and none appears twice."""
    yield b"[" + first.items
    chunk = first
    while chunk.size == CHUNK:
        async with source() as raw:
            chunk = await wire.next_chunk(raw, chunk.user_id, chunk.last_id, CHUNK)
        if chunk.size:
            yield b"," + chunk.items
    yield b"]"
