"""The README's commands work as written, from a checkout where `make run` made .venv."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support import run_cli

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _using_it_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Using it", 1)[1]
    block = re.search(r"```\n(.*?)```", section, re.S)
    assert block is not None
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_the_using_it_commands_run_as_written(tmp_path: Path) -> None:
    env = {"MASKMAIL_DATA_DIR": str(tmp_path / "var")}
    assert run_cli(env, "db", "upgrade").returncode == 0
    # The curl lines need the server that `make run` starts; the rest run here, in order,
    # in one shell (KEY is set by one line and used by the next).
    script = "set -e\n" + "\n".join(c for c in _using_it_commands() if not c.startswith("curl"))
    assert ".venv/bin/maskmail" in script
    result = subprocess.run(
        ["bash", "-c", script],
        cwd=ROOT,
        env={**os.environ, "PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith("maskmail ")
