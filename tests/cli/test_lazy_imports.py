"""``maskmail --version`` and ``--help`` load no database, web or mail library: the
command groups import what they need when they run (issue 23, item 4)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import run_cli

# Not pydantic: Typer builds its commands' parameters with it.
HEAVY = ("sqlalchemy", "alembic", "starlette", "fastapi", "uvicorn", "aiosmtpd", "asyncpg")

# A fresh interpreter: this one has long since imported everything.
PROBE = f"""
import json, sys
import maskmail.cli
print(json.dumps(sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))))
"""


def test_importing_the_command_loads_no_heavy_library() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(done.stdout) == []


def test_help_builds_without_them() -> None:
    probe = PROBE.replace(
        "import maskmail.cli",
        "import contextlib, io, maskmail.cli\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    maskmail.cli.main(['user', '--help'])",
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(done.stdout.splitlines()[-1]) == []


@pytest.mark.slow
def test_a_refusal_does_not_load_alembic(tmp_path: Path) -> None:
    """Only an unforeseen failure needs Alembic, to ask whether the schema is behind."""
    env = {**os.environ, "MASKMAIL_DATA_DIR": str(tmp_path)}
    assert run_cli(env, "db", "upgrade").returncode == 0
    probe = PROBE.replace(
        "import maskmail.cli",
        "import contextlib, maskmail.cli\n"
        "with contextlib.suppress(SystemExit):\n"
        "    maskmail.cli.main(['key', 'revoke', 'mm_none'])",
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.stderr == "maskmail: no live key matches that value\n"
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert "sqlalchemy" in loaded and "alembic" not in loaded
