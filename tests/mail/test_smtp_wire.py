"""SmarthostClient puts on the wire exactly what the unmodified aiosmtplib client does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiosmtplib
import pytest
from aiosmtplib.protocol import normalize_message_line_endings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maskmail.mail.smtp_pool import SmarthostClient, data_on_the_wire, wire_form
from tests.mail.conftest import HOST
from tests.profiles import examples

pytestmark = pytest.mark.anyio

EHLO_REPLY = b"250-wire.test\r\n250-SIZE 10000000\r\n250-8BITMIME\r\n250 SMTPUTF8\r\n"


@dataclass
class Recorder:
    """A minimal SMTP server that keeps every byte each connection sent it."""

    received: list[bytearray] = field(default_factory=list)
    start_reply: bytes = b"354 go on\r\n"
    end_reply: bytes = b"250 2.0.0 taken\r\n"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received = bytearray()
        self.received.append(received)
        writer.write(b"220 wire.test\r\n")
        try:
            while line := await reader.readuntil(b"\r\n"):
                received += line
                verb = line[:4].upper()
                if verb == b"EHLO":
                    writer.write(EHLO_REPLY)
                elif verb == b"DATA":
                    writer.write(self.start_reply)
                    if self.start_reply.startswith(b"354"):
                        received += await reader.readuntil(b"\r\n.\r\n")
                        writer.write(self.end_reply)
                elif verb == b"QUIT":
                    writer.write(b"221 bye\r\n")
                    break
                else:
                    writer.write(b"250 ok\r\n")
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()


@dataclass
class Pair:
    """The library's client and ours, each on its own connection to the recorder."""

    recorder: Recorder
    plain: aiosmtplib.SMTP
    fast: SmarthostClient

    def sent(self) -> tuple[bytes, bytes]:
        """What each client sent since the last call."""
        plain, fast = (bytes(received) for received in self.recorder.received)
        for received in self.recorder.received:
            received.clear()
        return plain, fast


@pytest.fixture
async def pair() -> AsyncIterator[Pair]:
    recorder = Recorder()
    server = await asyncio.start_server(recorder.serve, HOST, 0)
    port = server.sockets[0].getsockname()[1]
    clients = [
        kind(hostname=HOST, port=port, timeout=5, local_hostname="relay.test", start_tls=False)
        for kind in (aiosmtplib.SMTP, SmarthostClient)
    ]
    for client in clients:
        # One after the other, so the recorder's first connection is the plain client's.
        await client.connect()
    plain, fast = clients
    assert isinstance(fast, SmarthostClient)
    try:
        yield Pair(recorder, plain, fast)
    finally:
        for client in clients:
            await client.quit()
        server.close()
        await server.wait_closed()


async def send_both(pair: Pair, message: bytes) -> None:
    for client in (pair.plain, pair.fast):
        await client.sendmail("b@relay.test", ["o@owners.test"], message)


# Lines of text, dots and the bytes around them, each ended by CRLF most often, by a
# bare CR or LF, by both the wrong way round, or by nothing.
_TEXT = st.lists(st.sampled_from([b".", b"..", b"a", b" ", b"\xc3\xa9", b"\x00"]), max_size=4)
_ENDING = st.sampled_from([b"\r\n", b"\r\n", b"\r\n", b"\r", b"\n", b"\n\r", b""])
_LINES = st.lists(st.tuples(_TEXT.map(b"".join), _ENDING).map(b"".join), max_size=12)
messages = st.one_of(
    _LINES.map(b"".join),
    _LINES.map(lambda lines: b"".join(lines) + b"\r\n"),
    st.binary(max_size=200),
)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=list(HealthCheck))
@given(message=messages)
async def test_the_bytes_on_the_wire_are_the_librarys(pair: Pair, message: bytes) -> None:
    await send_both(pair, message)
    plain, fast = pair.sent()
    assert fast == plain


@given(message=messages)
def test_the_wire_form_is_the_librarys(message: bytes) -> None:
    """What is signed (mail/dkim.py) is what the library sends: the check that skips the
    library's regex for a message in CRLF changes nothing."""
    assert wire_form(message) == normalize_message_line_endings(message)


async def test_a_forward_in_crlf_skips_the_librarys_data(
    pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast path is taken for a forward in CRLF, dots and all: the library's DATA
    command, on this one connection, is never called."""

    async def refuse(message: bytes, timeout: float | None = None) -> aiosmtplib.SMTPResponse:
        raise AssertionError("the library's DATA ran")

    message = b"Subject: x\r\n\r\n.hidden\r\nline\r\n.\r\n..\r\n" * 50
    assert data_on_the_wire(message) is not None
    monkeypatch.setattr(pair.fast.protocol, "execute_data_command", refuse)
    await send_both(pair, message)
    plain, fast = pair.sent()
    assert fast == plain


@pytest.mark.parametrize(
    ("start_reply", "end_reply"),
    [(b"554 5.5.1 no\r\n", b""), (b"354 go on\r\n", b"552 5.3.4 too big\r\n")],
)
async def test_a_refused_data_raises_the_librarys_error(
    pair: Pair, start_reply: bytes, end_reply: bytes
) -> None:
    """Refused at DATA or after the message: the same error, and the same RSET after it."""
    pair.recorder.start_reply, pair.recorder.end_reply = start_reply, end_reply
    raised = []
    for client in (pair.plain, pair.fast):
        with pytest.raises(aiosmtplib.SMTPDataError) as refused:
            await client.sendmail("b@relay.test", ["o@owners.test"], b"Subject: x\r\n\r\nb\r\n")
        raised.append((refused.value.code, refused.value.message))
        assert client.is_connected
    assert raised[0] == raised[1]
    plain, fast = pair.sent()
    assert fast == plain
