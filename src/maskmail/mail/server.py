"""The SMTP server: aiosmtpd with our limits, banner and handler, on the running loop."""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol

from aiosmtpd.smtp import SMTP

from maskmail.core.dot_atom import DOT_ATOM
from maskmail.mail import smtp_replies as replies
from maskmail.mail.accepting import SharedAcceptor
from maskmail.mail.draining import OpenConnections
from maskmail.mail.handler import RelayHandler
from maskmail.startup import inherited_socket, listen_failure


class ConnectionGate:
    """Counts open connections across all protocol instances of one server, in all and
    per client address, so that one client cannot hold every connection."""

    def __init__(self, limit: int, per_client: int) -> None:
        self.limit = limit
        self.per_client = per_client
        self.connections = OpenConnections()
        self.by_client: Counter[str] = Counter()
        self.transports: set[asyncio.BaseTransport] = set()
        self.stopping = False

    def refusal(self, client: str) -> str | None:
        """The line to refuse a new connection from ``client`` with, or None to admit it."""
        if self.connections.count >= self.limit:
            return replies.TOO_MANY_CONNECTIONS
        if self.by_client[client] >= self.per_client:
            return replies.TOO_MANY_FROM_CLIENT
        return None

    def admit(self, client: str, transport: asyncio.BaseTransport) -> None:
        self.connections.opened()
        self.by_client[client] += 1
        self.transports.add(transport)

    def release(self, client: str, transport: asyncio.BaseTransport) -> None:
        self.connections.closed()
        self.transports.discard(transport)
        self.by_client[client] -= 1
        if self.by_client[client] <= 0:
            del self.by_client[client]


def _client_of(transport: asyncio.BaseTransport) -> str:
    peer = transport.get_extra_info("peername")
    return str(peer[0]) if isinstance(peer, tuple) and peer else "unknown"


class RelaySMTP(SMTP):
    """aiosmtpd's SMTP with a connection limit and our own address checks."""

    def __init__(self, handler: RelayHandler, gate: ConnectionGate, **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self._gate = gate
        self._client: str | None = None
        self._first_transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self._client is None:
            client = _client_of(transport)
            refusal = self._gate.refusal(client)
            if refusal is not None:
                _say(transport, refusal)
                transport.close()
                return
            self._gate.admit(client, transport)
            self._client = client
            self._first_transport = transport
            super().connection_made(transport)
            self._tie_session_to_transport()
            return
        super().connection_made(transport)  # again, with the TLS transport after STARTTLS

    def _tie_session_to_transport(self) -> None:
        """When the session's task ends, for whatever reason, close the transport, so
        that ``connection_lost`` gives the places back.

        aiosmtpd cancels the task when the client hangs up (EOF) or resets, but leaves
        the transport open when the task had not started yet or was not awaiting a read:
        under uvloop a bare connect and close then held its places until the idle
        timeout. One rule for every state a connection can die in.
        """
        task = self._handler_coroutine
        if task is not None:
            task.add_done_callback(self._hang_up)

    def _hang_up(self, _task: asyncio.Task[None] | None) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.close()

    def connection_lost(self, error: Exception | None) -> None:
        if self._client is None:
            return
        if self._first_transport is not None:
            self._gate.release(self._client, self._first_transport)
        self._client = None
        super().connection_lost(error)

    async def smtp_RSET(self, arg: str) -> None:  # noqa: N802 (aiosmtpd names its commands so)
        """During a stop, turn away the RSET with which Postfix probes a cached
        connection before reusing it: it then opens a new one, which the next process
        answers, rather than starting a message this process may have to cut off."""
        if self._gate.stopping:
            await self._say_goodbye()
            return
        await super().smtp_RSET(arg)

    async def smtp_DATA(self, arg: str) -> None:  # noqa: N802
        """A message under way when the stop began is finished, then the session ends."""
        await super().smtp_DATA(arg)
        if self._gate.stopping:
            self._hang_up(None)

    async def _say_goodbye(self) -> None:
        await self.push(replies.SHUTTING_DOWN)
        self._hang_up(None)

    def _timeout_cb(self) -> None:
        """Say why before hanging up on a silent client (RFC 5321 4.5.3.2)."""
        transport = self.transport
        if transport is not None and not transport.is_closing():
            _say(transport, replies.IDLE_TIMEOUT)
        super()._timeout_cb()  # type: ignore[no-untyped-call]

    def _getaddr(self, arg: str) -> tuple[str | None, str | None]:
        """Hand our handler what aiosmtpd would hide or answer itself.

        aiosmtpd's parser reads a CR inside ``<...>`` as folding white space and drops
        it, and answers 553 for what it cannot parse; the handler answers 501 for both.
        The plain forms nearly every client sends are read by ``_plain`` instead.

        On some malformed arguments (``<``, ``a@``, ``<x@[<>``) the email package's
        parser raises IndexError, AttributeError and the like rather than refusing
        them, which would reach ``handle_exception``: a 451 that the client retries for
        ever. The empty address gets aiosmtpd's own 501 syntax line, at MAIL and RCPT
        alike; the fallback below would not do at MAIL, where the handler takes any sender.
        """
        if any(c in arg for c in "\r\n\x00"):
            return arg.strip(), ""
        plain = _plain(arg, self.local_part_limit)
        if plain is not None:
            return plain
        try:
            address, rest = super()._getaddr(arg)
        except Exception:  # whatever the parser raises, it is the argument it cannot read
            return "", ""
        if address is None:
            return arg.strip().strip("<>") or "<>", ""
        return address, rest


_PLAIN = re.compile(rf"<(?:({DOT_ATOM})@({DOT_ATOM}))?>")


def _plain(arg: str, local_part_limit: int) -> tuple[str, str] | None:
    """What aiosmtpd's ``_getaddr`` gives for ``<local@domain>`` or ``<>`` and any
    parameters after it, or None for any other form, which is left to it.

    aiosmtpd reads every MAIL and RCPT argument with the email package's header parser,
    a visible share of the mail plane's time (docs/benchmarks.md); these forms it reads
    alike.
    """
    match = _PLAIN.match(arg)
    if match is None:
        return None
    local, domain = match.groups()
    rest = arg[match.end() :]
    if local is None:
        return "<>", rest  # the parser returns at once after "<>", leading space and all
    if rest[:1] in (" ", "\t"):
        rest = rest.lstrip()  # folding white space after ">", read as the parser reads it
    if (
        rest.startswith("(")  # a comment
        or "=?" in match[0]  # an encoded word, which the parser decodes
        or (local_part_limit and len(local) > local_part_limit)  # aiosmtpd's own answer
    ):
        return None
    return f"{local}@{domain}", rest


def _say(transport: asyncio.BaseTransport, line: str) -> None:
    # uvloop's transports write but are not asyncio.WriteTransport subclasses, so an
    # isinstance check is false under uvloop: ask for the method instead.
    write = getattr(transport, "write", None)
    if write is not None:
        write(f"{line}\r\n".encode())


class Listening(Protocol):
    """What takes the connections: the event loop's server, or a ``SharedAcceptor``."""

    def close(self) -> None: ...

    async def wait_closed(self) -> None: ...


@dataclass
class SmtpServer:
    """The listening server and the sessions it holds."""

    server: Listening
    gate: ConnectionGate

    def close(self) -> None:
        self.server.close()

    async def stop(self, grace: float) -> None:
        """Stop accepting, let open sessions end by themselves for up to ``grace``
        seconds (a message in DATA is finished, Postfix's cached idle connections
        expire), then close what is left."""
        self.gate.stopping = True
        self.server.close()
        await self.gate.connections.ended(grace)
        for transport in list(self.gate.transports):
            transport.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.server.wait_closed(), 1.0)


async def start_smtp(
    handler: RelayHandler,
    *,
    host: str,
    port: int,
    hostname: str,
    max_message_size: int,
    max_connections: int,
    max_per_client: int,
    idle_timeout: float,
    sock: socket.socket | None = None,
) -> SmtpServer:
    """Listen on ``sock`` when given (``smtp --workers`` shares one; taken from by a
    ``SharedAcceptor``), else on the socket systemd passed for ``port``, else on
    ``host:port``; the banner names the host and nothing about the software."""
    loop = asyncio.get_running_loop()
    gate = ConnectionGate(max_connections, max_per_client)

    def factory() -> RelaySMTP:
        return RelaySMTP(
            handler,
            gate,
            data_size_limit=max_message_size,
            enable_SMTPUTF8=True,
            decode_data=False,
            hostname=hostname,
            ident="ESMTP",
            timeout=idle_timeout,
            loop=loop,
        )

    if sock is not None:
        return SmtpServer(SharedAcceptor(sock, factory, lambda: gate.connections.count), gate)
    inherited = inherited_socket(port)
    try:
        if inherited is not None:
            return SmtpServer(await loop.create_server(factory, sock=inherited), gate)
        return SmtpServer(await loop.create_server(factory, host=host, port=port), gate)
    except OSError as exc:
        raise listen_failure(exc, host, port, "SMTP", "--smtp-port (up) or --port (smtp)") from exc
