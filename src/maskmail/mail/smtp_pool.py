"""Connections to the smarthost, kept open between forwards.

A new connection per forward cost a TCP handshake, the banner, EHLO and QUIT: more
round trips and CPU than the message itself (docs/benchmarks.md). Like Postfix's own
connection cache, a connection goes back to the pool after a clean transaction and is
closed once it has been idle for ``idle_seconds`` or used for ``max_age`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Literal

import aiosmtplib
from aiosmtplib.protocol import normalize_message_line_endings
from aiosmtplib.typing import Default

MAX_IDLE_CONNECTIONS = 16
IDLE_SECONDS = 5.0
MAX_AGE_SECONDS = 300.0


def _in_wire_form(message: bytes) -> bool:
    """Every CR and LF in ``message`` is part of a CRLF, and it ends with one: byte
    counts prove it without a copy."""
    crlf = message.count(b"\r\n")
    if not message.endswith(b"\r\n") or message.count(b"\r") != crlf:
        return False
    return message.count(b"\n") == crlf


def wire_form(message: bytes) -> bytes:
    """``message`` with the line endings aiosmtplib sends it with (a bare CR or LF made
    CRLF, one CRLF at the end): ``message`` itself when it has them already.

    What is DKIM-signed must be this, as the receiver verifies what it received: dkimpy
    takes a bare LF for a line break but a bare CR for a body byte.
    """
    return message if _in_wire_form(message) else normalize_message_line_endings(message)


def data_on_the_wire(message: bytes) -> bytes | None:
    """What aiosmtplib sends after DATA for ``message`` (line endings made CRLF, lines
    starting with a dot dot-stuffed, the terminator), if its line endings are all CRLF
    already and it ends with one; None otherwise."""
    if not _in_wire_form(message):
        return None
    # Every LF ends a line here, so a line starts with a dot where "\n." is, or at 0.
    stuffed = message.replace(b"\n.", b"\n..")
    if stuffed.startswith(b"."):
        stuffed = b"." + stuffed
    return stuffed + b".\r\n"


class SmarthostClient(aiosmtplib.SMTP):
    """aiosmtplib's client, whose DATA skips the library's two regex passes when they
    would change nothing.

    aiosmtplib rewrites every line ending, CRLF ones too, and then dot-stuffs, each with
    a regex over the whole message (a visible share of the mail plane's CPU,
    docs/benchmarks.md), for a message whose line endings are nearly always CRLF already
    (maskmail writes its headers so; the body arrives as SMTP lines, which keep a bare
    CR or LF only when the sender put one there, and a signed message is in
    ``wire_form``). Byte counts prove that case and ``bytes.replace`` stuffs it; any
    other message, or a first command on a connection not yet greeted, goes through
    the library's own ``data``. The bytes on the wire are the same either way
    (tests/mail/test_smtp_wire.py). Only the library's public commands are used, so the
    command lock is not held between DATA's two steps as the library does; the pool
    runs one transaction at a time on a connection.
    """

    async def data(
        self,
        message: str | bytes,
        /,
        *,
        timeout: float | Literal[Default.token] | None = Default.token,  # noqa: ASYNC109 (the library's signature)
    ) -> aiosmtplib.SMTPResponse:
        protocol = self.protocol
        payload = data_on_the_wire(message) if isinstance(message, bytes) else None
        if payload is None or protocol is None or self.is_ehlo_or_helo_needed:
            return await super().data(message, timeout=timeout)
        if timeout is Default.token:
            timeout = self.timeout
        try:
            start = await protocol.execute_command(b"DATA", timeout=timeout)
            if start.code != aiosmtplib.SMTPStatus.start_input:
                raise aiosmtplib.SMTPDataError(start.code, start.message)
            protocol.write(payload)
            response = await protocol.read_response(timeout=timeout)
        except (aiosmtplib.SMTPServerDisconnected, aiosmtplib.SMTPTimeoutError):
            self.close()
            raise
        if response.code != aiosmtplib.SMTPStatus.completed:
            raise aiosmtplib.SMTPDataError(response.code, response.message)
        return response


@dataclass
class _Pooled:
    client: SmarthostClient
    opened: float
    closer: asyncio.TimerHandle | None = None


class SmtpPool:
    """Open connections to one server; each is used by one transaction at a time."""

    def __init__(self, host: str, port: int, *, timeout: float, local_hostname: str) -> None:
        self.host, self.port = host, port
        self.timeout, self.local_hostname = timeout, local_hostname
        self._idle: list[_Pooled] = []
        self._closing: set[asyncio.Task[None]] = set()

    def _take(self) -> _Pooled | None:
        """The most recently used live connection, if one is idle."""
        while self._idle:
            pooled = self._idle.pop()
            if pooled.closer is not None:
                pooled.closer.cancel()
                pooled.closer = None
            if pooled.client.is_connected:
                return pooled
        return None

    async def _open(self) -> _Pooled:
        client = SmarthostClient(
            hostname=self.host,
            port=self.port,
            timeout=self.timeout,
            local_hostname=self.local_hostname,
            # The smarthost is the site's own MTA, normally on loopback or a private
            # network; TLS to it is its operator's choice and is not forced here.
            start_tls=False,
        )
        await client.connect()
        return _Pooled(client, time.monotonic())

    async def sendmail(
        self, message: bytes, *, sender: str, recipient: str, mail_options: list[str]
    ) -> None:
        """One transaction on a pooled connection, or on a new one.

        A pooled connection the server dropped while idle fails at its first command; that
        transaction is tried once more on a new connection. (A server that drops the
        connection after taking the message but before saying so gets it twice, as it
        would from any client that retries: the same holds for a timeout after DATA.)
        """
        pooled = self._take()
        reused = pooled is not None
        if pooled is None:
            pooled = await self._open()
        try:
            await pooled.client.sendmail(
                sender, [recipient], message, mail_options=list(mail_options)
            )
        except aiosmtplib.SMTPServerDisconnected:
            self._discard(pooled)
            if not reused:
                raise
            pooled = await self._open()
            try:
                await pooled.client.sendmail(
                    sender, [recipient], message, mail_options=list(mail_options)
                )
            except BaseException:
                self._discard(pooled)
                raise
        except BaseException:
            # After an error the session's state is unknown: never reuse it.
            self._discard(pooled)
            raise
        self._give_back(pooled)

    def _give_back(self, pooled: _Pooled) -> None:
        too_old = time.monotonic() - pooled.opened > MAX_AGE_SECONDS
        if too_old or len(self._idle) >= MAX_IDLE_CONNECTIONS or not pooled.client.is_connected:
            self._discard(pooled)
            return
        loop = asyncio.get_running_loop()
        pooled.closer = loop.call_later(IDLE_SECONDS, self._expire, pooled)
        self._idle.append(pooled)

    def _expire(self, pooled: _Pooled) -> None:
        if pooled in self._idle:
            self._idle.remove(pooled)
            self._discard(pooled)

    def _discard(self, pooled: _Pooled) -> None:
        """Say QUIT in the background; the caller does not wait for the server's goodbye."""
        if pooled.closer is not None:
            pooled.closer.cancel()
        task = asyncio.ensure_future(self._quit(pooled.client))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _quit(self, client: SmarthostClient) -> None:
        try:
            if client.is_connected:
                await asyncio.wait_for(client.quit(), min(self.timeout, 5))
        except (aiosmtplib.SMTPException, OSError, TimeoutError):
            pass
        finally:
            client.close()

    async def close(self) -> None:
        """Close every connection, idle or closing."""
        while self._idle:
            self._discard(self._idle.pop())
        if self._closing:
            with contextlib.suppress(Exception):
                await asyncio.gather(*self._closing, return_exceptions=True)
