"""The time to reject a wrong key does not depend on how much of it is right.

The server hashes the presented key and looks the hash up, so a key that shares all but
its last character with a real one should take as long to refuse as one that shares
nothing. Measured against the real server over HTTP, in rounds that send one request of
each class in a shuffled order, so load on the shared machine falls on all classes alike;
each class is summed up by a low quantile of its times, the least disturbed by that load.
"""

from __future__ import annotations

import secrets
import statistics
import time
from collections.abc import Iterator

import httpx
import pytest

from maskmail.core.keys import PREFIX
from tests.e2e.conftest import Deployment
from tests.fault.conftest import serving_api

pytestmark = pytest.mark.slow

SAMPLES = 600  # per class
WARM_UP = 100
# Two wrong-key classes may differ by this share of their time: loose for a shared 2-core
# machine, yet the measurement must resolve a smaller real cost (the control, below).
TOLERANCE = 0.15
ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"


CONTROL_ROWS = 100


def _other(char: str) -> str:
    return next(c for c in ALPHABET if c != char)


def _random_tail(n: int) -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(n))


def wrong_keys(real: str) -> dict[str, list[str]]:
    """Fresh wrong keys of the real key's length, by how much of the real key they share."""
    half = len(real) // 2

    def sharing(n: int) -> str:
        tail = _random_tail(len(real) - n - 1)
        return real[:n] + _other(real[n]) + tail

    return {
        "none": [sharing(0) for _ in range(SAMPLES)],
        "half": [sharing(half) for _ in range(SAMPLES)],
        "all_but_one": [sharing(len(real) - 1) for _ in range(SAMPLES)],
    }


@pytest.fixture
def server(deployment: Deployment) -> Iterator[tuple[str, str]]:
    """A real `maskmail serve`, with a limit high enough never to throttle the test."""
    with serving_api(deployment, "timing@example.com", "10000000/minute") as found:
        yield found


def measure(base: str, plan: list[tuple[str, str]]) -> dict[str, list[float]]:
    """Seconds per request by class, over one kept-alive connection, in the plan's order."""
    times: dict[str, list[float]] = {}
    with httpx.Client(base_url=base, timeout=30) as client:
        for label, key in plan:
            headers = {"Authorization": f"Bearer {key}"}
            started = time.perf_counter()
            response = client.get("/v3/relay/addresses", headers=headers)
            elapsed = time.perf_counter() - started
            assert response.status_code == (200 if label == "valid" else 401), response.text
            times.setdefault(label, []).append(elapsed)
    return times


def test_rejecting_a_wrong_key_takes_as_long_however_much_of_it_is_right(
    server: tuple[str, str],
) -> None:
    base, real = server
    assert real.startswith(PREFIX)
    # The control must cost measurably more than a rejection: since a page is one statement
    # whatever the key, the real key's listing carries CONTROL_ROWS addresses to do so.
    with httpx.Client(base_url=base, timeout=30) as client:
        for _ in range(CONTROL_ROWS):
            made = client.post("/v3/relay/addresses", headers={"Authorization": f"Bearer {real}"})
            assert made.status_code == 200, made.text
    keys = wrong_keys(real)
    shuffle = secrets.SystemRandom().shuffle
    plan = []
    for n in range(SAMPLES):
        # The control: the real key, whose answer lists CONTROL_ROWS addresses.
        round_ = [(label, found[n]) for label, found in keys.items()] + [("valid", real)]
        shuffle(round_)
        plan += round_
    measure(base, [("none", k) for k in keys["none"][:WARM_UP]])
    times = measure(base, plan)

    low = {label: statistics.quantiles(found, n=5)[0] for label, found in times.items()}
    wrong = [low[label] for label in keys]
    spread = max(wrong) - min(wrong)
    assert spread <= TOLERANCE * min(wrong), low
    # The measurement resolves a real difference: the longer listing shows, beyond the spread.
    assert low["valid"] - max(wrong) > spread, low
