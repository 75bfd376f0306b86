"""The SMTP server: aiosmtpd with our limits, banner and handler, on the running loop."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiosmtpd.smtp import SMTP

from maskmail.mail import replies
from maskmail.mail.handler import RelayHandler

# aiosmtpd logs every sender and recipient at INFO; users' addresses stay out of our logs.
logging.getLogger("mail.log").setLevel(logging.WARNING)


class ConnectionGate:
    """Counts open connections across all protocol instances of one server."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open = 0


class RelaySMTP(SMTP):
    """aiosmtpd's SMTP with a connection limit and our own address checks."""

    def __init__(self, handler: RelayHandler, gate: ConnectionGate, **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self._gate = gate
        self._admitted = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not self._admitted:
            if self._gate.open >= self._gate.limit:
                transport.write(f"{replies.TOO_MANY_CONNECTIONS}\r\n".encode())  # type: ignore[attr-defined]
                transport.close()
                return
            self._gate.open += 1
            self._admitted = True
        super().connection_made(transport)

    def connection_lost(self, error: Exception | None) -> None:
        if not self._admitted:
            return
        self._admitted = False
        self._gate.open -= 1
        super().connection_lost(error)

    def _timeout_cb(self) -> None:
        """Say why before hanging up on a silent client (RFC 5321 4.5.3.2)."""
        transport = self.transport
        if isinstance(transport, asyncio.WriteTransport) and not transport.is_closing():
            transport.write(f"{replies.IDLE_TIMEOUT}\r\n".encode())
        super()._timeout_cb()  # type: ignore[no-untyped-call]

    def _getaddr(self, arg: str) -> tuple[str | None, str | None]:
        """Hand our handler what aiosmtpd would hide or answer itself.

        aiosmtpd's parser reads a CR inside ``<...>`` as folding white space and drops
        it, and answers 553 for what it cannot parse; the handler answers 501 for both.
        """
        if any(c in arg for c in "\r\n\x00"):
            return arg.strip(), ""
        address, rest = super()._getaddr(arg)
        if address is None:
            return arg.strip().strip("<>") or "<>", ""
        return address, rest


async def start_smtp(
    handler: RelayHandler,
    *,
    host: str,
    port: int,
    hostname: str,
    max_message_size: int,
    max_connections: int,
    idle_timeout: float,
) -> asyncio.Server:
    """Listen on ``host:port``; the banner names the host and nothing about the software."""
    loop = asyncio.get_running_loop()
    gate = ConnectionGate(max_connections)

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

    return await loop.create_server(factory, host=host, port=port)
