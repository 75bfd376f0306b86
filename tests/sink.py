"""A sink smarthost: an in-process aiosmtpd server that records what maskmail sends on."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from aiosmtpd.controller import Controller

HOST = "127.0.0.1"


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    data: bytes


@dataclass
class SinkHandler:
    """The smarthost's behaviour: accept, or answer every message with ``reply``."""

    messages: list[Received] = field(default_factory=list)
    reply: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        if self.reply is not None:
            return self.reply
        with self.lock:
            self.messages.append(
                Received(envelope.mail_from, list(envelope.rcpt_tos), envelope.original_content)
            )
        return "250 2.0.0 queued"


class Sink:
    """An in-process aiosmtpd server standing in for the smarthost ("the internet")."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.handler = SinkHandler()
        self.controller: Controller | None = None

    def start(self) -> None:
        self.controller = Controller(self.handler, hostname=HOST, port=self.port)
        self.controller.start()

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
            self.controller = None

    @property
    def messages(self) -> list[Received]:
        with self.handler.lock:
            return list(self.handler.messages)
