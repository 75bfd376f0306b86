"""``maskmail up --demo`` prints a password and an address that sign in."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest

from tests.support import free_port, running

# Starts `maskmail up` as a real process.
pytestmark = pytest.mark.slow


def test_demo_prints_a_password_that_signs_in(tmp_path: Path) -> None:
    env = {
        "MASKMAIL_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'demo.db'}",
        "MASKMAIL_DATA_DIR": str(tmp_path / "var"),
    }
    port = free_port()
    args = ("up", "--demo", "--api-port", str(port), "--smtp-port", str(free_port()))
    log = tmp_path / "up.log"
    with running(env, *args, port=port, log=log):
        deadline = time.monotonic() + 10
        while "password" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        found = re.search(
            r"dashboard at (\S+) and sign in as (\S+) with the password:\n\s+(\S+)\n",
            log.read_text(),
        )
        assert found, log.read_text()
        url, email, password = found.groups()
        assert url == f"http://127.0.0.1:{port}/"
        with httpx.Client(base_url=url) as browser:
            wrong = browser.post("/sign-in", data={"email": email, "password": password + "x"})
            right = browser.post("/sign-in", data={"email": email, "password": password})
            home = browser.get("/")
    assert wrong.status_code == 401
    assert right.status_code == 303 and "Sign out" in home.text
