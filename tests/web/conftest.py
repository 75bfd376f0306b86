"""Dashboard fixtures: the real app over ASGITransport, on its own engine and pool (as in
tests/api), and the database set up and read back in transactions of the test's own."""

from __future__ import annotations

import mailbox
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

import httpx
import pytest
from argon2 import PasswordHasher
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from maskmail.core import passwords
from maskmail.store import accounts, sessions
from maskmail.store.engine import transaction
from tests.api.conftest import app, clean, client_for, settings

# The app, its settings and the emptying afterwards are tests/api's.
__all__ = ["app", "clean", "settings"]

P = ParamSpec("P")
T = TypeVar("T")

PASSWORD = "correct horse battery"
_CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')


@pytest.fixture(autouse=True)
def cheap_argon2(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """argon2id still, at its lowest cost: the dashboard tests sign in hundreds of times,
    and the cost parameters are not what they test (tests/web/test_password_cli.py runs
    the real command with the real ones)."""
    cheap = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
    monkeypatch.setattr(passwords, "_hasher", cheap)
    passwords._dummy.cache_clear()
    yield
    passwords._dummy.cache_clear()


@dataclass
class Person:
    email: str
    user_id: int
    client: httpx.AsyncClient

    async def csrf(self) -> str:
        found = _CSRF.search((await self.client.get("/")).text)
        assert found is not None
        return found.group(1)

    async def post(self, path: str, data: dict[str, str] | None = None) -> httpx.Response:
        body = {"csrf": await self.csrf(), **(data or {})}
        return await self.client.post(path, data=body, headers={"Origin": "http://testserver"})


@dataclass
class Db:
    """Store functions called outside any request, each in a transaction of its own: a
    write is committed before the next request, a read sees what the app committed."""

    engine: AsyncEngine

    async def read(
        self,
        work: Callable[Concatenate[AsyncConnection, P], Awaitable[T]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        async with transaction(self.engine, readonly=True) as conn:
            return await work(conn, *args, **kwargs)

    async def write(
        self,
        work: Callable[Concatenate[AsyncConnection, P], Awaitable[T]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        async with transaction(self.engine) as conn:
            return await work(conn, *args, **kwargs)


@pytest.fixture
def db(clean: AsyncEngine) -> Db:
    return Db(clean)


async def add_person(conn: AsyncConnection, email: str, password: str = PASSWORD) -> int:
    """A user with a dashboard password."""
    user_id = await accounts.add_user(conn, email)
    await sessions.set_password(conn, user_id, passwords.hash_password(password))
    return user_id


SignIn = Callable[[str], Awaitable[Person]]


@pytest.fixture
async def sign_in(app: FastAPI, db: Db) -> AsyncIterator[SignIn]:
    async with AsyncExitStack() as stack:

        async def make(email: str) -> Person:
            user_id = await db.write(add_person, email)
            client = await stack.enter_async_context(client_for(app))
            answer = await client.post("/sign-in", data={"email": email, "password": PASSWORD})
            assert answer.status_code == 303, answer.text
            return Person(email, user_id, client)

        yield make


def verification_code(outbox: Path, recipient: str) -> str:
    """The 6-digit code of the last verification message sent to ``recipient`` through
    the Maildir outbox (the outbound path without a smarthost)."""
    sent = [m for m in mailbox.Maildir(outbox, create=False) if m["To"] == recipient]
    assert sent, f"no verification message to {recipient}"
    payload = sent[-1].get_payload(decode=True)
    assert isinstance(payload, bytes)
    found = re.search(rb"code: (\d{6})", payload)
    assert found is not None
    return found.group(1).decode()
