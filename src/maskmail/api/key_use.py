"""When each API key was last used, for the dashboard's keys page: written after the
response, at most once a minute per key and process, so a busy key costs no write per
request."""

from __future__ import annotations

import logging
import time

from starlette.types import Scope

from maskmail.core.errors import MaskmailError
from maskmail.store import accounts
from maskmail.store.clock import now
from maskmail.store.driver import Checkout

log = logging.getLogger("maskmail.api")

EVERY = 60.0
MAX_REMEMBERED = 10_000


class KeyUse:
    """Called by ``api/front.py`` once a request to a keyed route has been answered."""

    def __init__(self) -> None:
        self.written: dict[str, float] = {}

    async def answered(self, scope: Scope, status: int) -> None:
        if 200 <= status < 300:
            # The hash the key check made (api/deps.py); a success means the key is live.
            key_hash = scope.get("state", {}).get("key_hash")
            if key_hash is not None:
                await self._note(scope, key_hash)

    async def _note(self, scope: Scope, key_hash: str) -> None:
        moment = time.monotonic()
        if moment - self.written.get(key_hash, -EVERY) < EVERY:
            return
        if len(self.written) >= MAX_REMEMBERED:
            self.written.clear()
        self.written[key_hash] = moment
        drivers: Checkout = scope["app"].state.drivers
        try:
            async with drivers() as driver:
                await accounts.mark_used(driver, key_hash, now())
        except MaskmailError:
            # The response is sent already; a missed note is only a stale "last used".
            log.warning("could not record an API key's last use")
