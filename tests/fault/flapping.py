"""A smarthost that flaps: for each message it accepts, refuses (4xx) or hangs, at random.

It never accepts late. A hang lasts well past maskmail's outbound timeout and ends in a
refusal that nobody reads; the message is not recorded. Were a hung smarthost to accept
after maskmail gave up, maskmail would answer 451, its sender would retry, and the owner
would rightly get the message twice: that is SMTP's at-least-once contract, not a bug, so
this sink keeps its answers on time and "exactly once" stays a fair thing to assert.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiosmtpd.controller import Controller

from tests.sink import HOST, Received

ACCEPT, REFUSE_RCPT, REFUSE_DATA, HANG = "accept", "refuse-rcpt", "refuse-data", "hang"
# Odds per message: mostly flapping, but often enough accepting that the load moves.
ODDS = {ACCEPT: 0.5, REFUSE_RCPT: 0.15, REFUSE_DATA: 0.2, HANG: 0.15}


@dataclass
class FlappingHandler:
    hang_seconds: float
    seed: int
    messages: list[Received] = field(default_factory=list)
    moods: Counter[str] = field(default_factory=Counter)
    # Set when the load is over: from then on every message is accepted, so retries drain.
    calm: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    def _mood(self) -> str:
        if self.calm:
            mood = ACCEPT
        else:
            mood = self._random.choices(list(ODDS), weights=list(ODDS.values()))[0]
        with self.lock:
            self.moods[mood] += 1
        return mood

    async def handle_RCPT(  # noqa: N802
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        envelope.mood = self._mood()
        if envelope.mood == REFUSE_RCPT:
            return "450 4.2.0 Mailbox busy, try again later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        if envelope.mood == REFUSE_DATA:
            return "451 4.3.0 Temporary failure"
        if envelope.mood == HANG:
            await asyncio.sleep(self.hang_seconds)
            return "451 4.4.2 Took too long"
        with self.lock:
            self.messages.append(
                Received(envelope.mail_from, list(envelope.rcpt_tos), envelope.original_content)
            )
        return "250 2.0.0 queued"


class FlappingSink:
    """The flapping smarthost on a port of its own, in a thread."""

    def __init__(self, port: int, *, hang_seconds: float, seed: int) -> None:
        self.port = port
        self.handler = FlappingHandler(hang_seconds, seed)
        self.controller = Controller(self.handler, hostname=HOST, port=port)

    def start(self) -> None:
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()

    @property
    def messages(self) -> list[Received]:
        with self.handler.lock:
            return list(self.handler.messages)
