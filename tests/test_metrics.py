"""maskmail.metrics: importing it writes nothing, so that ``serve --workers`` can make
PROMETHEUS_MULTIPROC_DIR afresh after the command's imports (metrics.prepare_multiprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow  # a fresh interpreter importing the app: about a second
def test_importing_the_metrics_touches_no_multiprocess_file(tmp_path: Path) -> None:
    missing = tmp_path / "not-made-yet"
    found = subprocess.run(
        [sys.executable, "-c", "import maskmail.metrics, maskmail.mail.plane"],
        env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(missing)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert found.returncode == 0, found.stderr
    assert not missing.exists()
