"""Which start-up failures are explained as the database's, and which are not."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

from maskmail.config import Settings
from maskmail.startup import explain


def _settings(tmp_path: Path) -> Settings:
    url = f"sqlite+aiosqlite:///{tmp_path / 'db' / 'maskmail.db'}"
    return Settings(database_url=url, domain="relay.test", data_dir=tmp_path)


def test_a_file_in_the_database_directory_is_the_databases(tmp_path: Path) -> None:
    denied = PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "db" / "x"))
    line = explain(denied, _settings(tmp_path))
    assert line is not None and "SQLite" in line and "Permission denied" in line
    opened = sqlite3.OperationalError("unable to open database file")
    assert "SQLite" in (explain(opened, _settings(tmp_path)) or "")


def test_another_os_error_is_not_the_databases(tmp_path: Path) -> None:
    busy = OSError(errno.EADDRINUSE, "address already in use")
    elsewhere = PermissionError(errno.EACCES, "Permission denied", "/etc/elsewhere")
    assert explain(busy, _settings(tmp_path)) is None
    assert explain(elsewhere, _settings(tmp_path)) is None
