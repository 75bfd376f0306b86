"""When each API key was last used, for the dashboard's keys page: noted in memory once
a request to a keyed route has succeeded, and written off the request path.

A key is noted at most once a minute per process, so a busy key costs no write per
request, and a request costs none at all: a task of the app's lifespan writes what was
noted every few seconds, all of it in one transaction, and once more when the app stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from starlette.types import Scope

from maskmail.core.errors import MaskmailError
from maskmail.store import accounts
from maskmail.store.clock import now
from maskmail.store.driver import WRITE, DriverPool

log = logging.getLogger("maskmail.api")

# A key is noted at most once per this many seconds (per process).
EVERY = 60.0
# How often the notes are written.
WRITE_EVERY = 5.0
MAX_REMEMBERED = 10_000


class KeyUses:
    """``answered`` is called by ``api/front.py``; ``start`` and ``close`` by the lifespan
    (maskmail/app.py), which hands over the driver connections to write with."""

    def __init__(self, every: float = WRITE_EVERY) -> None:
        self.every = every
        self.noted: dict[str, float] = {}
        # Uses noted and not yet written: the key's hash and the Unix time of the use.
        self.pending: dict[str, int] = {}
        self._drivers: DriverPool | None = None
        self._task: asyncio.Task[None] | None = None

    def answered(self, scope: Scope, status: int) -> None:
        if not 200 <= status < 300:
            return
        # The hash the key check made (api/deps.py); a success means the key is live.
        key_hash = scope.get("state", {}).get("key_hash")
        if key_hash is None:
            return
        moment = time.monotonic()
        if moment - self.noted.get(key_hash, -EVERY) < EVERY:
            return
        if len(self.noted) >= MAX_REMEMBERED:
            self.noted.clear()
        if len(self.pending) < MAX_REMEMBERED:
            self.noted[key_hash] = moment
            self.pending[key_hash] = now()

    def start(self, drivers: DriverPool) -> None:
        self._drivers = drivers
        self._task = asyncio.get_running_loop().create_task(self._writing())

    async def _writing(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            try:
                await self.write()
            except Exception as exc:  # a refused statement: those notes are dropped
                log.error("recording the last use of API keys failed: %s", type(exc).__name__)

    async def write(self) -> None:
        """Write what was noted; what cannot be written now is tried again next time."""
        if not self.pending or self._drivers is None:
            return
        uses, self.pending = self.pending, {}
        try:
            await self._drivers.run(accounts.mark_used(uses.items()), WRITE)
        except MaskmailError:
            # Only a stale "last used" until the next try.
            log.warning("could not record the last use of %d API keys", len(uses))
            for key_hash, when in uses.items():
                self.pending.setdefault(key_hash, when)

    async def close(self) -> None:
        """Stop the task and write what is left."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.write()
