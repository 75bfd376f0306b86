"""``maskmail up`` runs the API and the mail plane on one engine, one pool."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import pytest
import uvicorn
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail import app as api_app
from maskmail import runner
from maskmail.config import Settings
from maskmail.store.engine import create_engine
from maskmail.store.migrate import upgrade
from tests.support import free_port


def test_up_makes_one_engine_and_the_api_uses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'up.db'}"
    upgrade(url)
    settings = Settings(database_url=url, data_dir=tmp_path, domain="relay.test")
    made: list[AsyncEngine] = []
    used: list[AsyncEngine] = []

    def counted(*args: Any, **kwargs: Any) -> AsyncEngine:
        engine = create_engine(*args, **kwargs)
        made.append(engine)
        return engine

    # Wherever ``up`` could make an engine: the runner, and the app's lifespan.
    monkeypatch.setattr(runner, "create_engine", counted)
    monkeypatch.setattr(api_app, "create_engine", counted)

    async def serve(server: uvicorn.Server, sockets: Any = None) -> None:
        # Start and stop the app as uvicorn would, without serving a request.
        app = cast(FastAPI, server.config.app)
        async with app.router.lifespan_context(app):
            used.append(app.state.engine)
        for sock in sockets or ():
            sock.close()

    monkeypatch.setattr(uvicorn.Server, "serve", serve)
    asyncio.run(
        runner.run_up(settings, host="127.0.0.1", api_port=free_port(), smtp_port=free_port())
    )
    assert len(made) == 1
    assert used == made
