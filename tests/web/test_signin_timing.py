"""Sign-in takes as long for an account that does not exist as for a wrong password.

tests/web/test_guessing.py shows the mechanism (one argon2 verification each); this
measures the answer's time, with a hash costly enough to stand out from the rest of a
request, in interleaved rounds compared by their medians.
"""

from __future__ import annotations

import secrets
import statistics
import time
from collections.abc import Iterator

import pytest
from argon2 import PasswordHasher
from fastapi import FastAPI

from maskmail.core import passwords
from maskmail.store import accounts
from tests.api.conftest import client_for, make_settings, started_app
from tests.web.conftest import PASSWORD, Db, add_person

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
ROUNDS = 9


@pytest.fixture(autouse=True)
def cheap_argon2(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Replaces the dashboard tests' cheapest hasher: each verification must cost far
    more than the database query and the page around it (tens of milliseconds), as the
    real parameters do."""
    monkeypatch.setattr(passwords, "_hasher", PasswordHasher(time_cost=2, memory_cost=16384))
    passwords._dummy.cache_clear()
    yield
    passwords._dummy.cache_clear()


async def _timed(app: FastAPI, email: str, password: str) -> float:
    async with client_for(app) as client:
        started = time.perf_counter()
        answer = await client.post("/sign-in", data={"email": email, "password": password})
        elapsed = time.perf_counter() - started
    assert answer.status_code == 401
    return elapsed


async def test_unknown_accounts_take_as_long_as_wrong_passwords(database_url: str, db: Db) -> None:
    tag = secrets.token_hex(4)
    await db.write(add_person, f"known{tag}@example.com")
    await db.write(accounts.add_user, f"bare{tag}@example.com")
    cases = {
        "wrong password": (f"known{tag}@example.com", "not the password"),
        "unknown account": (f"nobody{tag}@example.com", PASSWORD),
        "no password": (f"bare{tag}@example.com", PASSWORD),
    }
    times: dict[str, list[float]] = {case: [] for case in cases}
    settings = make_settings(database_url, signin_rate_limit="1000/minute")
    rng = secrets.SystemRandom()
    async with started_app(settings) as app:
        await _timed(app, *cases["unknown account"])  # makes the dummy hash once
        for _ in range(ROUNDS):
            order = list(cases)
            rng.shuffle(order)  # load on the machine falls on every case alike
            for case in order:
                times[case].append(await _timed(app, *cases[case]))
    medians = {case: statistics.median(found) for case, found in times.items()}
    wrong = medians["wrong password"]
    # Without the verification an unknown account answered in a few percent of the time.
    for case in ("unknown account", "no password"):
        assert 0.5 * wrong < medians[case] < 2 * wrong, medians
