"""The walks of a list request and of a forwarded mail through maskmail's modules.

The walk is the sequence of maskmail modules that control enters by a call from a
different maskmail module: a call from X into a function of Y, X != Y, where X is the
nearest maskmail frame beneath the new one (framework code between them, such as
FastAPI calling a dependency or the logging library calling our formatter, is looked
through). A module's returns are the times it is entered by such a call after its first.
A resumed coroutine or generator is not a call, and a frame with no maskmail frame
beneath it (a task or worker thread a library started) has no caller X, so neither is
in the walk. Only the thread that serves is traced, and only from the moment the request
or message is sent: the app's startup, the fixtures and a first request that imports
what is imported lazily are not. The logging call sites count: they are our modules.

A list request may return to a module it has left at most once, a forwarded mail's path
at most three times: more means a workflow is spread over modules that call back and
forth, so a reader has to follow it there and back.
"""

from __future__ import annotations

import secrets
import sys
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.core import keys
from maskmail.mail.plane import mail_plane
from maskmail.store import accounts
from maskmail.store.addresses import create_address
from maskmail.store.engine import create_engine, transaction
from tests.api.conftest import BASE, client_for, make_settings, started_app
from tests.mail.conftest import DOMAIN, HOST, mail_settings, message, send_async
from tests.sink import Sink
from tests.support import free_port

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),
]

PACKAGE = "maskmail"
LIST_RETURNS = 1
FORWARD_RETURNS = 3


def _module(frame: FrameType) -> str | None:
    name = frame.f_globals.get("__name__", "")
    if name == PACKAGE or name.startswith(PACKAGE + "."):
        return str(name)
    return None


def _caller(frame: FrameType) -> str | None:
    below = frame.f_back
    while below is not None:
        module = _module(below)
        if module is not None:
            return module
        below = below.f_back
    return None


@dataclass
class Walk:
    """Each entry is (caller, callee, callee's function), in the order control went."""

    steps: list[tuple[str, str, str]] = field(default_factory=list)
    started: set[FrameType] = field(default_factory=set)

    def profile(self, frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        callee = _module(frame)
        if callee is None:
            return
        if frame in self.started:
            return  # a coroutine or generator resumed, not called
        self.started.add(frame)
        caller = _caller(frame)
        if caller is not None and caller != callee:
            self.steps.append((caller, callee, frame.f_code.co_name))

    def returns(self) -> Counter[str]:
        entries = Counter(callee for _, callee, _ in self.steps)
        return Counter({module: n - 1 for module, n in entries.items() if n > 1})

    def most_returns(self) -> int:
        return max(self.returns().values(), default=0)

    def show(self) -> str:
        """The walk, then each module's returns with the callers that made them."""
        lines = [f"{caller} -> {callee}.{function}" for caller, callee, function in self.steps]
        lines.append("returns:")
        for module, n in self.returns().most_common():
            callers = Counter(caller for caller, callee, _ in self.steps if callee == module)
            by = ", ".join(f"{caller} x{k}" for caller, k in callers.most_common())
            lines.append(f"  {module} {n} (entered from {by})")
        return "\n".join(lines)


@contextmanager
def traced() -> Iterator[Walk]:
    walk = Walk()
    previous = sys.getprofile()
    sys.setprofile(walk.profile)
    try:
        yield walk
    finally:
        sys.setprofile(previous)
        walk.started.clear()


async def _user(engine: AsyncEngine, addresses: int) -> tuple[str, str, list[str]]:
    """A new user with an API key and ``addresses`` relay addresses: the mailbox, the key
    and the addresses."""
    email = f"owner{secrets.token_hex(5)}@example.com"
    key = keys.generate_key()
    async with transaction(engine) as connection:
        user_id = await accounts.add_user(connection, email)
        await accounts.add_key(connection, user_id, keys.hash_key(key))
        made = [
            await create_address(connection, user_id, domain=DOMAIN, length=8)
            for _ in range(addresses)
        ]
    return email, key, [address.full_address for address in made]


def _require(holds: bool, why: str) -> None:
    """A precondition of the walk: fails the test outright, never as the expected failure
    (``xfail`` takes only an AssertionError)."""
    if not holds:
        pytest.fail(why)


@pytest.fixture
async def walk_engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url, pool_size=2)
    yield engine
    await engine.dispose()


async def test_list_request_returns_to_a_module_at_most_once(
    database_url: str, walk_engine: AsyncEngine
) -> None:
    _, warm, _ = await _user(walk_engine, 3)
    _, traced_key, _ = await _user(walk_engine, 3)
    async with started_app(make_settings(database_url)) as app, client_for(app) as client:
        headers = {"Authorization": f"Bearer {warm}", "Accept": "application/json"}
        assert (await client.get(BASE, params={"paging": 1}, headers=headers)).status_code == 200
        headers["Authorization"] = f"Bearer {traced_key}"
        with traced() as walk:
            response = await client.get(BASE, params={"paging": 1}, headers=headers)
    _require(response.status_code == 200 and len(response.json()["results"]) == 3, response.text)
    _require(bool(walk.steps), "nothing of maskmail was traced")
    assert walk.most_returns() <= LIST_RETURNS, walk.show()


@pytest.fixture
async def mail_engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    """The mail plane's engine as ``maskmail smtp`` makes it: the default pool size."""
    engine = create_engine(database_url)
    yield engine
    await engine.dispose()


async def test_forwarded_mail_returns_to_a_module_at_most_three_times(
    database_url: str, tmp_path: Path, sink: Sink, mail_engine: AsyncEngine
) -> None:
    settings = mail_settings(database_url, tmp_path, smarthost=f"{HOST}:{sink.port}")
    port = free_port()
    async with mail_plane(settings, mail_engine, host=HOST, port=port):
        warm_owner, _, [warm] = await _user(mail_engine, 1)
        owner, _, [mask] = await _user(mail_engine, 1)
        await send_async(port, "carol@example.net", [warm], message(to=warm))
        with traced() as walk:
            refused = await send_async(port, "alice@example.com", [mask], message(to=mask))
    delivered = [m.rcpt_tos for m in sink.messages]
    _require(refused == {} and delivered == [[warm_owner], [owner]], f"{refused} {delivered}")
    _require(bool(walk.steps), "nothing of maskmail was traced")
    assert walk.most_returns() <= FORWARD_RETURNS, walk.show()
