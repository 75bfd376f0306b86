"""Wrong second steps (codes and keys), throttled per account and per client, apart from
the password's failures: in the sign-in limiter's storage (Redis when configured), at
``MASKMAIL_TWO_FACTOR_RATE_LIMIT``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from fastapi import Request
from limits import RateLimitItem, parse

from maskmail.config import Settings
from maskmail.http_shared.forwarded import client_host
from maskmail.http_shared.ratelimit import Limiter

TOO_MANY = "Too many wrong codes; wait a while, then try again."


@lru_cache(maxsize=4)
def _item(rate: str) -> RateLimitItem:
    return parse(rate)


@dataclass(frozen=True, slots=True)
class Tries:
    limiter: Limiter
    item: RateLimitItem
    names: tuple[str, ...]

    async def refused(self) -> bool:
        """True when the account or the client has used up its wrong tries."""
        for name in self.names:
            if not await self.limiter.strategy.test(self.item, name):
                return True
        return False

    async def failed(self) -> None:
        for name in self.names:
            await self.limiter.strategy.hit(self.item, name)


def tries(request: Request, user_id: int) -> Tries:
    settings: Settings = request.app.state.settings
    limiter: Limiter = request.app.state.signin_limiter
    names = (f"second:client:{client_host(request)}", f"second:account:{user_id}")
    return Tries(limiter, _item(settings.two_factor_rate_limit), names)
