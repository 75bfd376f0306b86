"""A database error that is not an outage is a bug: a logged 500, and the pool stays."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from sqlalchemy import text

from maskmail.app import create_app
from maskmail.store.engine import create_engine, transaction
from maskmail.store.migrate import upgrade
from tests.api.conftest import BASE, client_for, make_settings
from tests.support import make_keys

pytestmark = pytest.mark.anyio


@pytest.fixture
def migrated(tmp_path: Path) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path / 'broken.db'}"
    upgrade(url)
    return url


async def test_a_missing_table_is_a_logged_500_not_an_outage(
    migrated: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = migrated
    (key,) = await make_keys(url, "alice@example.com")
    setup = create_engine(url, pool_size=1)
    async with transaction(setup) as conn:
        await conn.execute(text("DROP TABLE bounces"))
        await conn.execute(text("DROP TABLE reverse_aliases"))
        await conn.execute(text("DROP TABLE addresses"))
    await setup.dispose()

    app = create_app(make_settings(url))
    headers = {"Authorization": f"Bearer {key}"}
    async with app.router.lifespan_context(app), client_for(app) as client:
        pool = app.state.engine.pool
        answers = []
        for method, path in [("GET", BASE), ("GET", f"{BASE}?paging=1"), ("POST", BASE)]:
            response = await client.request(method, path, headers=headers)
            answers.append((response.status_code, response.json()["code"]))
        # The hot routes' connection is kept by the driver pool between requests (checked
        # out); the other route's goes back to SQLAlchemy's pool. Neither is thrown away.
        kept = pool.checkedout()
        assert pool.checkedin() + kept > 0
        response = await client.get(f"{BASE}/1", headers=headers)
        answers.append((response.status_code, response.json()["code"]))
        assert pool.checkedout() == kept
        assert pool.checkedin() > 0
        assert app.state.engine.pool is pool  # not thrown away and replaced
    assert answers == [(500, "internal_error")] * 4
    assert "retry" not in response.headers
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(logged) >= 4
    assert not [r for r in caplog.records if "unavailable" in r.getMessage()]
