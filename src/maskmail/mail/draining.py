"""Counting open connections, so that a stop can wait for them to end."""

from __future__ import annotations

import asyncio


class OpenConnections:
    """How many connections are open; ``ended`` waits, with a bound, for none to be."""

    def __init__(self) -> None:
        self.count = 0
        self._none = asyncio.Event()
        self._none.set()

    def opened(self) -> None:
        self.count += 1
        self._none.clear()

    def closed(self) -> None:
        self.count -= 1
        if self.count <= 0:
            self._none.set()

    async def ended(self, grace: float) -> bool:
        """True once every connection has closed; False if some are open after ``grace`` seconds."""
        try:
            async with asyncio.timeout(grace):
                await self._none.wait()
        except TimeoutError:
            return False
        return True
