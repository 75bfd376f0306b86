"""Asking for a reset link takes as long for an email no account has as for one that has
an account: the link is made and mailed after the answer (services/account_mail.py).
tests/web/test_password_reset.py checks that the two answers are the same text."""

from __future__ import annotations

import secrets
import statistics
import time
from pathlib import Path

import pytest
from fastapi import FastAPI

from maskmail.services import account_mail
from tests.api.conftest import client_for, make_settings, started_app
from tests.web.conftest import Db, add_person

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
ROUNDS = 15


async def _timed(app: FastAPI, email: str) -> float:
    async with client_for(app) as client:
        started = time.perf_counter()
        answer = await client.post(
            "/forgot-password", data={"email": email}, headers={"Origin": "http://testserver"}
        )
        elapsed = time.perf_counter() - started
    assert answer.status_code == 200
    # Not timed: the message the known account gets is made and sent now.
    await account_mail.settle()
    return elapsed


async def test_unknown_emails_take_as_long_as_known_ones(
    database_url: str, db: Db, tmp_path: Path
) -> None:
    tag = secrets.token_hex(4)
    await db.write(add_person, f"known{tag}@example.com")
    cases = {"known": f"known{tag}@example.com", "unknown": f"nobody{tag}@example.com"}
    times: dict[str, list[float]] = {case: [] for case in cases}
    settings = make_settings(
        database_url, data_dir=tmp_path, password_reset_rate_limit="1000/minute"
    )
    rng = secrets.SystemRandom()
    async with started_app(settings) as app:
        await _timed(app, cases["unknown"])  # warms the page's template
        for _ in range(ROUNDS):
            order = list(cases)
            rng.shuffle(order)  # load on the machine falls on every case alike
            for case in order:
                times[case].append(await _timed(app, cases[case]))
    medians = {case: statistics.median(found) for case, found in times.items()}
    assert 0.5 * medians["known"] < medians["unknown"] < 2 * medians["known"], medians
    sent = list((tmp_path / "outbox" / "new").iterdir())
    # The known account got its links (at most three live at once), the other nothing.
    assert len(sent) == 3
