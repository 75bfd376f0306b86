"""Every start-up failure is one line on stderr that says what to do, and a non-zero exit."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_cli import _one_line_error
from tests.support import PG_ADMIN_DSN, free_port, maskmail_cmd

pytestmark = pytest.mark.slow

PG_SERVER = PG_ADMIN_DSN.rsplit("/", 1)[0]


def _run(tmp: Path, *args: str, **settings: str) -> str:
    env = {
        **os.environ,
        "MASKMAIL_DATA_DIR": str(tmp / "var"),
        **{f"MASKMAIL_{name.upper()}": value for name, value in settings.items()},
    }
    result = subprocess.run(
        maskmail_cmd(*args), env=env, capture_output=True, text=True, timeout=180, check=False
    )
    return _one_line_error(result)


@pytest.mark.parametrize(
    "command", [("db", "upgrade"), ("up", "--api-port", "1", "--smtp-port", "1")]
)
@pytest.mark.parametrize(
    ("url", "fragments"),
    [
        (f"{PG_SERVER}/maskmail_no_such_db", ("does not exist", "createdb maskmail_no_such_db")),
        ("postgresql://postgres@127.0.0.1:9/x", ("cannot reach", "127.0.0.1:9", "start it")),
        ("mysql://user@127.0.0.1/db", ("MASKMAIL_DATABASE_URL", "unsupported", "postgresql://")),
    ],
    ids=["missing-database", "unreachable-server", "unsupported-scheme"],
)
def test_database_failures(
    tmp_path: Path, command: tuple[str, ...], url: str, fragments: tuple[str, ...]
) -> None:
    line = _run(tmp_path, *command, database_url=url)
    assert line.startswith("maskmail: ")
    for fragment in fragments:
        assert fragment in line


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("up", "--api-port", "{busy}", "--smtp-port", "{free}"), "--api-port"),
        (("up", "--api-port", "{free}", "--smtp-port", "{busy}"), "--smtp-port"),
        (("serve", "--port", "{busy}"), "--port"),
        (("smtp", "--port", "{busy}"), "--port"),
        (
            ("up", "--api-port", "{free}", "--smtp-port", "{free}", "--policy-port", "{busy}"),
            "--policy-port",
        ),
        (("smtp", "--port", "{free}", "--policy-port", "{busy}"), "--policy-port"),
        (("smtp", "--port", "{free}", "--health-port", "{busy}"), "--health-port"),
    ],
    ids=["up-api", "up-smtp", "serve", "smtp", "up-policy", "smtp-policy", "smtp-health"],
)
def test_a_busy_port(tmp_path: Path, busy_port: int, args: tuple[str, ...], option: str) -> None:
    filled = [a.format(busy=busy_port, free=free_port()) for a in args]
    line = _run(tmp_path, *filled)
    assert f"127.0.0.1:{busy_port}" in line and "already in use" in line and option in line
    assert "SQLite" not in line


def test_an_unwritable_data_directory(tmp_path: Path) -> None:
    # A path under a regular file can be created by nobody, root included.
    (tmp_path / "file").write_text("")
    line = _run(tmp_path, "up", data_dir=str(tmp_path / "file" / "var"))
    assert "data directory" in line and "MASKMAIL_DATA_DIR" in line


def test_a_bad_setting_value(tmp_path: Path) -> None:
    line = _run(tmp_path, "up", smtp_max_per_client="many")
    assert "MASKMAIL_SMTP_MAX_PER_CLIENT" in line
