"""The mail plane forgets the daily counts older than MASKMAIL_ACTIVITY_DAYS, once a day,
and a database that is away for one round only delays it."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.config import Settings
from maskmail.core.errors import StoreUnavailable
from maskmail.mail import activity_pruning
from maskmail.mail.plane import mail_plane
from maskmail.store import activity
from maskmail.store.clock import today
from maskmail.store.engine import transaction
from maskmail.store.statements import Script
from tests.mail.conftest import HOST, Masks
from tests.support import free_port

pytestmark = pytest.mark.anyio


async def _days(engine: AsyncEngine, address_id: int) -> list[int]:
    async with transaction(engine, readonly=True) as conn:
        found = await conn.execute(
            text("SELECT day FROM daily_activity WHERE address_id = :a ORDER BY day"),
            {"a": address_id},
        )
        return [int(row[0]) for row in found]


async def test_the_mail_plane_forgets_old_days_and_tries_again_after_an_outage(
    settings: Settings,
    relay_engine: AsyncEngine,
    masks: Masks,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    mask = await masks.make()
    now = today()
    async with transaction(relay_engine) as conn:
        for day in (now, now - 29, now - 30, now - 365):
            await conn.execute(
                text("INSERT INTO daily_activity (address_id, day) VALUES (:a, :d)"),
                {"a": mask.address_id, "d": day},
            )
    rounds: list[int] = []
    real = activity.forget_old

    def first_fails(keep_days: int) -> Script[None]:
        rounds.append(keep_days)
        if len(rounds) == 1:
            raise StoreUnavailable("the database is unavailable; try again shortly")
        return real(keep_days)

    monkeypatch.setattr(activity, "forget_old", first_fails)
    monkeypatch.setattr(activity_pruning, "FIRST", 0.01)
    monkeypatch.setattr(activity_pruning, "EVERY", 0.2)
    kept = settings.model_copy(update={"activity_days": 30})
    with caplog.at_level(logging.WARNING, logger="maskmail.mail.activity_pruning"):
        async with mail_plane(kept, relay_engine, host=HOST, port=free_port()):
            deadline = time.monotonic() + 10
            while await _days(relay_engine, mask.address_id) != [now - 29, now]:
                assert time.monotonic() < deadline, await _days(relay_engine, mask.address_id)
                await asyncio.sleep(0.05)
    assert rounds[:2] == [30, 30]
    assert "could not forget the old daily counts" in caplog.text
