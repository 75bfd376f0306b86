"""Per-key request limits, in memory or shared through Redis (the ``limits`` library)."""

from __future__ import annotations

import math
import time

import coredis
from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import SlidingWindowCounterRateLimiter

from maskmail.core.errors import RateLimited


def _redis(redis_url: str) -> tuple[Storage, coredis.ConnectionPool]:
    scheme, sep, _ = redis_url.partition("://")
    if not sep or scheme not in {"redis", "rediss"}:
        raise ValueError("MASKMAIL_REDIS_URL must start with redis:// or rediss://")
    # Our own pool, so that shutdown can close its connections.
    pool = coredis.ConnectionPool.from_url(redis_url)
    storage = RedisStorage(f"async+{redis_url}", connection_pool=pool)  # type: ignore[arg-type]
    return storage, pool


class Limiter:
    """Counts hits per identifier; the same limit applies to every identifier."""

    def __init__(self, rate: str, redis_url: str = "") -> None:
        self.item: RateLimitItem = parse(rate)
        self.pool: coredis.ConnectionPool | None = None
        if redis_url:
            self.storage, self.pool = _redis(redis_url)
        else:
            self.storage = MemoryStorage()
        self.strategy = SlidingWindowCounterRateLimiter(self.storage)

    async def hit(self, identifier: str) -> None:
        """Count one request, or raise RateLimited with a Retry-After in seconds."""
        if await self.strategy.hit(self.item, identifier):
            return
        stats = await self.strategy.get_window_stats(self.item, identifier)
        retry_after = max(1, math.ceil(stats.reset_time - time.time()))
        raise RateLimited(f"too many requests; retry in {retry_after} seconds", retry_after)

    async def close(self) -> None:
        # Only local counters are dropped: Redis counters belong to every API process.
        if isinstance(self.storage, MemoryStorage):
            await self.storage.reset()
        if self.pool is not None:
            self.pool.disconnect()
