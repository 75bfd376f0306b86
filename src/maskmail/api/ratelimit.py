"""Per-key request limits, in memory or shared through Redis (the ``limits`` library)."""

from __future__ import annotations

import math
import time

from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, Storage
from limits.aio.strategies import SlidingWindowCounterRateLimiter
from limits.storage import storage_from_string

from maskmail.core.errors import RateLimited


def _storage(redis_url: str) -> Storage:
    if not redis_url:
        return MemoryStorage()
    scheme, sep, rest = redis_url.partition("://")
    if not sep or scheme not in {"redis", "rediss", "redis+unix"}:
        raise ValueError("MASKMAIL_REDIS_URL must start with redis://, rediss:// or redis+unix://")
    storage = storage_from_string(f"async+{scheme}://{rest}")
    assert isinstance(storage, Storage)
    return storage


class Limiter:
    """Counts hits per identifier; the same limit applies to every identifier."""

    def __init__(self, rate: str, redis_url: str = "") -> None:
        self.item: RateLimitItem = parse(rate)
        self.storage = _storage(redis_url)
        self.strategy = SlidingWindowCounterRateLimiter(self.storage)

    async def hit(self, identifier: str) -> None:
        """Count one request, or raise RateLimited with a Retry-After in seconds."""
        if await self.strategy.hit(self.item, identifier):
            return
        stats = await self.strategy.get_window_stats(self.item, identifier)
        retry_after = max(1, math.ceil(stats.reset_time - time.time()))
        raise RateLimited("too many requests; slow down and retry later", retry_after)

    async def close(self) -> None:
        # Only local counters are dropped: Redis counters belong to every API process.
        if isinstance(self.storage, MemoryStorage):
            await self.storage.reset()
