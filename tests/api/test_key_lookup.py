"""A wrong key costs the same however much of it is right: checked by structure.

Refusing a key takes the same time whatever it shares with a real one because the key
is hashed, whole, before anything looks at it, and the database is asked for that hash
by equality. So, for every route: the statements a request sends do not depend on the
key presented, and their parameters hold the key's hash and never the key or a part of
it.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.core.keys import hash_key
from tests.api.conftest import BASE, Caller
from tests.api.noting import NotedPool, Sent

pytestmark = pytest.mark.anyio


def _flat(args: Any) -> list[str]:
    if isinstance(args, dict):
        return [str(v) for v in args.values()]
    if isinstance(args, (list, tuple)):
        return [str(v) for v in args]
    return [str(args)]


@pytest.mark.slow
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
    app.state.drivers = NotedPool(app.state.drivers, sent)

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
