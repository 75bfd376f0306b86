"""An answer's head leaves with its body in one write, and nothing else changes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from uvicorn.server import ServerState

from maskmail.api.one_write import HeadWithBody, OneWriteHttpTools
from maskmail.runner import uvicorn_options

pytestmark = pytest.mark.anyio


class Recorded:
    """A transport that keeps what is written to it, one entry per write."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 40000)}.get(
            name, default
        )

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def test_the_head_waits_for_the_body_and_leaves_with_it() -> None:
    sent = Recorded()
    transport = HeadWithBody(sent)  # type: ignore[arg-type]
    transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
    assert sent.writes == []
    transport.write(b"ok")
    assert sent.writes == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"]
    transport.flush()
    assert len(sent.writes) == 1


def test_an_interim_answer_and_later_parts_go_out_at_once() -> None:
    sent = Recorded()
    transport = HeadWithBody(sent)  # type: ignore[arg-type]
    transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    assert sent.writes == [b"HTTP/1.1 100 Continue\r\n\r\n"]
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.write(b"5\r\nfirst\r\n")
    transport.write(b"6\r\nsecond\r\n")
    assert sent.writes[1:] == [b"HTTP/1.1 200 OK\r\n\r\n5\r\nfirst\r\n", b"6\r\nsecond\r\n"]


def test_closing_writes_a_head_still_held_first() -> None:
    sent = Recorded()
    transport = HeadWithBody(sent)  # type: ignore[arg-type]
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.close()
    assert sent.writes == [b"HTTP/1.1 200 OK\r\n\r\n"]
    assert sent.closed and transport.is_closing()


async def _small(request: Request) -> Response:
    return Response(b"hello", media_type="text/plain")


async def _streamed(request: Request) -> StreamingResponse:
    async def parts() -> Any:
        yield b"first"
        await asyncio.sleep(0)
        yield b"second"

    return StreamingResponse(parts(), media_type="text/plain")


async def _broken(request: Request) -> Response:
    raise RuntimeError("after nothing was sent")


APP = Starlette(
    routes=[
        Route("/small", _small, methods=["GET", "HEAD"]),
        Route("/streamed", _streamed),
        Route("/broken", _broken),
    ]
)


async def _answer(request: bytes) -> Recorded:
    """``request`` through maskmail's HTTP protocol, as ``maskmail serve`` runs it."""
    options = {**uvicorn_options(access_log=False), "lifespan": "off"}
    config = uvicorn.Config(APP, **options)  # type: ignore[arg-type]
    config.load()
    assert config.http_protocol_class is OneWriteHttpTools
    protocol = OneWriteHttpTools(config=config, server_state=ServerState(), app_state={})
    sent = Recorded()
    protocol.connection_made(sent)  # type: ignore[arg-type]
    protocol.data_received(request)
    for _ in range(200):
        if (protocol.cycle is not None and protocol.cycle.response_complete) or sent.closed:
            break
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.01)
    protocol.connection_lost(None)
    return sent


async def test_a_small_answer_is_one_write() -> None:
    sent = await _answer(b"GET /small HTTP/1.1\r\nHost: relay.test\r\n\r\n")
    assert len(sent.writes) == 1
    assert sent.writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert sent.writes[0].endswith(b"\r\n\r\nhello")


async def test_an_answer_without_a_body_still_sends_its_head() -> None:
    sent = await _answer(b"HEAD /small HTTP/1.1\r\nHost: relay.test\r\n\r\n")
    assert len(sent.writes) == 1
    assert sent.writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"content-length: 5\r\n" in sent.writes[0]
    assert sent.writes[0].endswith(b"\r\n\r\n")


async def test_a_streamed_answer_sends_its_head_with_the_first_part() -> None:
    sent = await _answer(b"GET /streamed HTTP/1.1\r\nHost: relay.test\r\n\r\n")
    assert sent.writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert sent.writes[0].endswith(b"\r\n\r\n5\r\nfirst\r\n")
    assert b"".join(sent.writes[1:]) == b"6\r\nsecond\r\n0\r\n\r\n"


async def test_an_app_that_fails_still_gets_its_500_out() -> None:
    sent = await _answer(b"GET /broken HTTP/1.1\r\nHost: relay.test\r\n\r\n")
    assert b"".join(sent.writes).startswith(b"HTTP/1.1 500 ")
    assert b"".join(sent.writes).endswith(b"Internal Server Error")
