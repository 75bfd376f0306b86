"""Per-key request limits, in memory or shared through Redis (the ``limits`` library).

Both count by the sliding window counter: the hits of the current window plus those of
the previous one, weighted by how much of it the sliding window still covers. Through
Redis the library counts, in one round trip, so the limit holds across every process.
In memory the same rule is ``LocalWindows``: a dict answered without awaiting, because
the library's memory storage (a lock, several awaits and an expiry task per hit) cost
the list route a noticeable share of its time (docs/benchmarks.md).
"""

from __future__ import annotations

import math
import time

import coredis
from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import SlidingWindowCounterRateLimiter

from maskmail.core.errors import RateLimited

# Past this many names counted at once, the names of finished windows are dropped.
SWEEP_AT = 100_000


def _redis(redis_url: str) -> tuple[Storage, coredis.ConnectionPool]:
    scheme, sep, _ = redis_url.partition("://")
    if not sep or scheme not in {"redis", "rediss"}:
        raise ValueError("MASKMAIL_REDIS_URL must start with redis:// or rediss://")
    # Our own pool, so that shutdown can close its connections.
    pool = coredis.ConnectionPool.from_url(redis_url)
    storage = RedisStorage(f"async+{redis_url}", connection_pool=pool)  # type: ignore[arg-type]
    return storage, pool


class LocalWindows:
    """The sliding window counter for one process: per name, the current window's
    number and the counts of it and of the window before."""

    def __init__(self, amount: int, seconds: int) -> None:
        self.amount = amount
        self.seconds = seconds
        self.counts: dict[str, tuple[int, int, int]] = {}

    def hit(self, name: str, now: float) -> int:
        """0 when the hit is counted; else the seconds until one would be."""
        window, into = divmod(now, self.seconds)
        current = int(window)
        found = self.counts.get(name)
        if found is None or found[0] < current - 1:
            previous, hits = 0, 0
        elif found[0] < current:
            previous, hits = found[2], 0
        else:
            previous, hits = found[1], found[2]
        left = self.seconds - into  # of the previous window, still inside the sliding one
        if math.floor(previous * left / self.seconds + hits) + 1 > self.amount:
            return max(1, math.ceil(left))
        if found is None and len(self.counts) >= SWEEP_AT:
            self._sweep(current)
        self.counts[name] = (current, previous, hits + 1)
        return 0

    def _sweep(self, current: int) -> None:
        """Forget names whose last hit is older than the previous window: they count 0."""
        self.counts = {n: c for n, c in self.counts.items() if c[0] >= current - 1}

    def clear(self) -> None:
        self.counts.clear()


class Limiter:
    """Counts hits per identifier; the same limit applies to every identifier.

    ``strategy`` is the library's, in the same storage: web/throttle.py tests before it
    counts. In memory ``hit`` counts in ``LocalWindows`` instead; no name is counted by
    both (the sign-in limiter is only used through ``strategy``).
    """

    def __init__(self, rate: str, redis_url: str = "") -> None:
        self.item: RateLimitItem = parse(rate)
        self.pool: coredis.ConnectionPool | None = None
        self.local: LocalWindows | None = None
        if redis_url:
            self.storage, self.pool = _redis(redis_url)
        else:
            self.storage = MemoryStorage()
            self.local = LocalWindows(self.item.amount, self.item.get_expiry())
        self.strategy = SlidingWindowCounterRateLimiter(self.storage)

    async def hit(self, identifier: str) -> None:
        """Count one request, or raise RateLimited with a Retry-After in seconds."""
        if self.local is not None:
            wait = self.local.hit(identifier, time.time())
            if wait:
                raise RateLimited(f"too many requests; retry in {wait} seconds", wait)
            return
        if await self.strategy.hit(self.item, identifier):
            return
        stats = await self.strategy.get_window_stats(self.item, identifier)
        retry_after = max(1, math.ceil(stats.reset_time - time.time()))
        raise RateLimited(f"too many requests; retry in {retry_after} seconds", retry_after)

    async def close(self) -> None:
        # Only local counters are dropped: Redis counters belong to every API process.
        if isinstance(self.storage, MemoryStorage):
            await self.storage.reset()
        if self.local is not None:
            self.local.clear()
        if self.pool is not None:
            self.pool.disconnect()
