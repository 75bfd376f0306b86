"""Importing maskmail does nothing: logging, threads, the collector and caches are the
entry points' and the lifespan's business (issue 12, item 3)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# A fresh interpreter imports every module.
pytestmark = pytest.mark.slow

# Run in a fresh interpreter: this test process has long since configured and imported.
PROBE = """
import gc, importlib, json, logging, pkgutil, threading
import maskmail
before = (list(logging.getLogger().handlers), logging.getLogger().level, threading.active_count())
unbounded = []
for info in pkgutil.walk_packages(maskmail.__path__, "maskmail."):
    if ".migrations" in info.name:
        continue  # Alembic loads these itself, inside a migration context
    module = importlib.import_module(info.name)
    for name, value in vars(module).items():
        # A functools cache; looked up in __dict__, since a SQLAlchemy column answers any name.
        params = vars(value).get("cache_parameters") if hasattr(value, "__dict__") else None
        if params is not None and params()["maxsize"] is None:
            unbounded.append(f"{info.name}.{name}")
after = (list(logging.getLogger().handlers), logging.getLogger().level, threading.active_count())
print(json.dumps({
    "logging_or_threads_changed": before != after,
    "frozen": gc.get_freeze_count(),
    "unbounded_caches": sorted(set(unbounded)),
}))
"""


def test_importing_every_module_changes_nothing_and_caches_nothing_without_bound() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    found = json.loads(done.stdout.splitlines()[-1])
    assert found == {"logging_or_threads_changed": False, "frozen": 0, "unbounded_caches": []}
