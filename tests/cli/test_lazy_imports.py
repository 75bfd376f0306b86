"""``maskmail --version`` and ``--help`` load no database, web or mail library: the
command groups import what they need when they run (issue 23, item 4)."""

from __future__ import annotations

import json
import subprocess
import sys

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
