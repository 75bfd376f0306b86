"""For a user who is not root, scripts/system-deps.sh names the missing Debian packages and
the command to install them, and never runs apt-get."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).parents[1] / "scripts" / "system-deps.sh"


def test_a_user_who_is_not_root_is_told_what_to_install(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ran_apt = tmp_path / "apt-get ran"
    fakes = {"id": "echo 1000", "apt-get": f"touch '{ran_apt}'"}
    for name, body in fakes.items():
        fake = bin_dir / name
        fake.write_text(f"#!/bin/sh\n{body}\n")
        fake.chmod(0o755)
    bash = shutil.which("bash")
    assert bash is not None
    # Only the fakes on PATH: every command the script looks for is missing.
    done = subprocess.run(
        [bash, str(SCRIPT)],
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1
    assert not ran_apt.exists()
    command = done.stderr.strip().splitlines()[-1].split()
    assert command[:3] == ["apt-get", "install", "--no-install-recommends"]
    assert {"rspamd", "postfix", "wrk", "pgbouncer", "chromium"} <= set(command[3:])
