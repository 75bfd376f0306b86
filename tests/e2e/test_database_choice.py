"""Which database a process uses: a mistyped SQLite path is refused, not made anew, and
the database in use is in the start-up log without its password (issue 21)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from maskmail.store.engine import shown
from tests.e2e.test_cli import _one_line_error
from tests.support import free_port, run_cli, running

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("command", [("db", "upgrade"), ("up",), ("serve",), ("smtp",)])
def test_a_sqlite_url_in_a_missing_folder_is_refused(tmp_path: Path, command: tuple[str]) -> None:
    typo = tmp_path / "vra" / "maskmail.db"
    env = {
        "MASKMAIL_DATA_DIR": str(tmp_path / "var"),
        "MASKMAIL_DATABASE_URL": f"sqlite:///{typo}",
    }
    line = _one_line_error(run_cli(env, *command))
    assert f"{typo.parent} of the SQLite database does not exist" in line
    assert not typo.parent.exists()


def test_the_default_data_directory_is_still_made(tmp_path: Path) -> None:
    env = {"MASKMAIL_DATA_DIR": str(tmp_path / "new" / "var")}
    assert run_cli(env, "db", "upgrade").returncode == 0
    assert (tmp_path / "new" / "var" / "maskmail.db").is_file()


@pytest.mark.parametrize("command", ["serve", "smtp"])
def test_the_start_up_log_names_the_database(tmp_path: Path, command: str) -> None:
    env = {"MASKMAIL_DATA_DIR": str(tmp_path / "var")}
    port, log = free_port(), tmp_path / "out.log"
    wanted = f"database: sqlite+aiosqlite:///{tmp_path / 'var' / 'maskmail.db'}"
    with running(env, command, "--port", str(port), port=port, log=log):
        deadline = time.monotonic() + 10
        while wanted not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
    assert wanted in log.read_text()


def test_the_logged_url_has_no_password() -> None:
    logged = shown("postgresql+asyncpg://maskmail:s3cret@db.internal:5432/maskmail")
    assert logged == "postgresql+asyncpg://maskmail:***@db.internal:5432/maskmail"
