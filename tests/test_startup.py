"""Which start-up failures are explained as the database's, and which are not."""

from __future__ import annotations

import errno
import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from maskmail.config import Settings
from maskmail.startup import explain
from tests.support import activated


def _settings(tmp_path: Path) -> Settings:
    url = f"sqlite+aiosqlite:///{tmp_path / 'db' / 'maskmail.db'}"
    return Settings(database_url=url, domain="relay.test", data_dir=tmp_path)


def test_the_database_its_files_and_its_directory_are_the_databases(tmp_path: Path) -> None:
    for name in ("maskmail.db", "maskmail.db-journal", "maskmail.db-wal", ""):
        path = str(tmp_path / "db" / name).rstrip("/")
        denied = PermissionError(errno.EACCES, "Permission denied", path)
        line = explain(denied, _settings(tmp_path))
        assert line is not None and "SQLite" in line and "Permission denied" in line, name
    opened = sqlite3.OperationalError("unable to open database file")
    assert "SQLite" in (explain(opened, _settings(tmp_path)) or "")


def test_another_file_beside_the_database_is_not_the_databases(tmp_path: Path) -> None:
    """PROMETHEUS_MULTIPROC_DIR may be made beside the database; its files are not."""
    for path in (tmp_path / "db" / "prometheus" / "gauge_livesum_1.db", tmp_path / "db" / "x"):
        missing = FileNotFoundError(errno.ENOENT, "No such file or directory", str(path))
        assert explain(missing, _settings(tmp_path)) is None, path
        on_postgres = Settings(
            database_url="postgresql+asyncpg://postgres@127.0.0.1:5432/x", domain="relay.test"
        )
        assert explain(missing, on_postgres) is None, path


def test_another_os_error_is_not_the_databases(tmp_path: Path) -> None:
    busy = OSError(errno.EADDRINUSE, "address already in use")
    elsewhere = PermissionError(errno.EACCES, "Permission denied", "/etc/elsewhere")
    assert explain(busy, _settings(tmp_path)) is None
    assert explain(elsewhere, _settings(tmp_path)) is None


_SHOW_INHERITED = (
    "import sys; from maskmail.startup import inherited_socket as found; "
    "print([None if s is None else s.getsockname()[1] for s in map(found, map(int, sys.argv[1:]))])"
)


def _inherited(sockets: list[socket.socket], *ports: int, pid: str = "$$") -> str:
    command, passed = activated([sys.executable, "-c", _SHOW_INHERITED, *map(str, ports)], sockets)
    command[2] = command[2].replace("LISTEN_PID=$$", f"LISTEN_PID={pid}")
    try:
        done = subprocess.run(command, pass_fds=passed, capture_output=True, text=True, timeout=60)
    finally:
        for fd in passed:
            os.close(fd)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.slow
def test_sockets_passed_by_systemd_are_found_by_port() -> None:
    with (
        socket.create_server(("127.0.0.1", 0)) as one,
        socket.create_server(("127.0.0.1", 0)) as two,
    ):
        ports = [one.getsockname()[1], two.getsockname()[1]]
        other = ports[0] + ports[1]  # not passed
        assert (
            _inherited([one, two], ports[1], other, ports[0]) == f"[{ports[1]}, None, {ports[0]}]"
        )
        # Meant for another process (a parent's variables inherited): not taken.
        assert _inherited([one, two], ports[0], pid="1") == "[None]"
