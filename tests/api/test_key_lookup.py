"""A wrong key costs the same however much of it is right: checked by structure.

Refusing a key takes the same time whatever it shares with a real one because the key
is hashed, whole, before anything looks at it, and the database is asked for that hash
by equality. So, for every route: the statements a request sends do not depend on the
key presented, and their parameters hold the key's hash and never the key or a part of
it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.core.keys import hash_key
from maskmail.store.driver import Checkout, Driver, Row, Statement
from tests.api.conftest import BASE, Caller

pytestmark = pytest.mark.anyio
Sent = list[tuple[str, tuple[Any, ...]]]


def _noting(drivers: Checkout, sent: Sent) -> Checkout:
    @asynccontextmanager
    async def noted() -> AsyncIterator[Driver]:
        async with drivers() as driver:
            rows, bulk_rows = driver.rows, driver.bulk_rows

            async def note(statement: Statement, *args: Any) -> Sequence[Row]:
                sent.append((statement.sqlite, args))
                return await rows(statement, *args)

            async def note_bulk(statement: Statement, *args: Any) -> Sequence[Row]:
                sent.append((statement.sqlite, args))
                return await bulk_rows(statement, *args)

            driver.rows = note  # type: ignore[method-assign]
            driver.bulk_rows = note_bulk  # type: ignore[method-assign]
            yield driver

    return noted


def _flat(args: Any) -> list[str]:
    if isinstance(args, dict):
        return [str(v) for v in args.values()]
    if isinstance(args, (list, tuple)):
        return [str(v) for v in args]
    return [str(args)]


@pytest.mark.parametrize(
    ("method", "path", "header"),
    [
        ("GET", BASE, "bearer"),
        ("GET", f"{BASE}?paging=1", "bearer"),
        ("POST", BASE, "bearer"),
        ("GET", f"{BASE}/1", "bearer"),
        ("POST", "/api/v1/aliases", "bearer"),
        ("POST", "/api/alias/random/new", "raw"),
    ],
)
async def test_a_wrong_keys_lookup_does_not_depend_on_the_key(
    client: httpx.AsyncClient,
    app: FastAPI,
    alice: Caller,
    method: str,
    path: str,
    header: str,
) -> None:
    engine: AsyncEngine = app.state.engine
    real = alice.key
    wrong = {
        "shares nothing": ("x" if real[0] != "x" else "y") * len(real),
        "all but the last": real[:-1] + ("x" if real[-1] != "x" else "y"),
    }
    sent: Sent = []
    app.state.drivers = _noting(app.state.drivers, sent)

    def note(_conn: Any, _cursor: Any, statement: str, params: Any, *rest: Any) -> None:
        if "SAVEPOINT" not in statement.upper():
            sent.append((statement, tuple(_flat(params))))

    event.listen(engine.sync_engine, "before_cursor_execute", note)
    shapes = {}
    try:
        for label, key in wrong.items():
            sent.clear()
            headers = (
                {"Authorization": f"Bearer {key}"}
                if header == "bearer"
                else {"Authentication": key}
            )
            response = await client.request(method, path, headers=headers)
            assert response.status_code == 401, response.text
            assert sent, "the key was looked up"
            values = [str(v) for _, args in sent for v in args]
            assert hash_key(key) in values
            # Neither the key nor any piece of it of a useful length reaches the database.
            assert not [v for v in values if len(v) >= 8 and v in key], values
            shapes[label] = [statement for statement, _ in sent]
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", note)
    assert shapes["shares nothing"] == shapes["all but the last"]
