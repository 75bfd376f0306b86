"""Checking a dashboard password, throttled: at sign-in and when the password is changed.

Failures count per client (behind the proxy, the address it forwards for) and per
account, in the API's limiter storage (Redis when configured), so that neither many
accounts nor many clients help a guesser, and both doors share one budget.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from fastapi import Request

from maskmail.core import passwords
from maskmail.http_shared.forwarded import client_host
from maskmail.http_shared.ratelimit import Limiter

TOO_MANY = "Too many attempts; wait a minute."


@dataclass(frozen=True, slots=True)
class Attempt:
    """One try at one account's password from one client."""

    limiter: Limiter
    names: tuple[str, ...]

    async def refused(self) -> bool:
        """True when the client or the account has used up its failures."""
        for name in self.names:
            if not await self.limiter.strategy.test(self.limiter.item, name):
                return True
        return False

    async def verify(self, stored: str | None, password: str) -> bool:
        """Whether ``password`` matches ``stored``; a failure is counted.

        ``stored`` is None for an account that does not exist or has no password: the
        same argon2 verification runs (against core/passwords.py's dummy hash), so the
        time taken does not tell which accounts exist.
        """
        if await asyncio.to_thread(passwords.verify, stored, password):
            return True
        for name in self.names:
            await self.limiter.strategy.hit(self.limiter.item, name)
        return False


def attempt(request: Request, email: str) -> Attempt:
    """A try at the account of ``email`` (as typed: the key is case-blind)."""
    limiter: Limiter = request.app.state.signin_limiter
    names = (f"signin:client:{client_host(request)}", f"signin:account:{email.lower()}")
    return Attempt(limiter, names)
