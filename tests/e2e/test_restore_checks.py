"""`maskmail restore` takes only a database whose schema maskmail's own migrations make,
and never while a maskmail process serves the database (issue 21, item 12)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from alembic import command

from maskmail.store.migrate import alembic_config
from tests.support import free_port, run_cli, running

pytestmark = pytest.mark.slow

CRAFTS: dict[str, str] = {
    "trigger": (
        "CREATE TRIGGER steal AFTER INSERT ON addresses "
        "BEGIN UPDATE addresses SET user_id = 1 WHERE id = new.id; END"
    ),
    "dropped table": "DROP TABLE web_sessions",
    "index": "CREATE INDEX spare ON addresses (user_id, id)",
    "view": "CREATE VIEW everyone AS SELECT * FROM users",
    "table": "CREATE TABLE extra (x INTEGER)",
    "unknown revision": "UPDATE alembic_version SET version_num = 'ffff'",
}


def _genuine(tmp: Path) -> tuple[dict[str, str], Path]:
    """A migrated database with a user, and a backup of it taken by ``maskmail backup``."""
    env = {"MASKMAIL_DATA_DIR": str(tmp / "var")}
    assert run_cli(env, "db", "upgrade").returncode == 0
    assert run_cli(env, "user", "add", "kim@example.com").returncode == 0
    made = run_cli(env, "backup", str(tmp / "genuine.db"))
    assert made.returncode == 0, made.stderr
    return env, tmp / "genuine.db"


def _crafted(backup: Path, statement: str) -> Path:
    crafted = backup.with_name("crafted.db")
    crafted.write_bytes(backup.read_bytes())
    with closing(sqlite3.connect(crafted)) as db:
        db.execute(statement)
        db.commit()
    return crafted


def _refused(env: dict[str, str], path: Path, needle: str) -> None:
    live = Path(env["MASKMAIL_DATA_DIR"]) / "maskmail.db"
    before = live.read_bytes()
    result = run_cli(env, "restore", str(path))
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("maskmail: ") and needle in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert live.read_bytes() == before


@pytest.mark.parametrize("craft", CRAFTS)
def test_restore_refuses_a_schema_maskmail_does_not_make(tmp_path: Path, craft: str) -> None:
    env, backup = _genuine(tmp_path)
    needle = "revision" if craft == "unknown revision" else "schema"
    _refused(env, _crafted(backup, CRAFTS[craft]), needle)


def test_restore_takes_a_genuine_backup_and_an_older_revision(tmp_path: Path) -> None:
    env, backup = _genuine(tmp_path)
    assert run_cli(env, "user", "add", "lee@example.com").returncode == 0
    restored = run_cli(env, "restore", str(backup))
    assert restored.returncode == 0, restored.stderr
    assert run_cli(env, "user", "list").stdout == "kim@example.com\t0\n"
    # A backup from an older maskmail is one of ours too: restored, then migrated.
    first = tmp_path / "first.db"
    command.upgrade(alembic_config(f"sqlite+aiosqlite:///{first}"), "0001")
    restored = run_cli(env, "restore", str(first))
    assert restored.returncode == 0, restored.stderr
    assert run_cli(env, "db", "upgrade").returncode == 0
    assert run_cli(env, "user", "list").returncode == 0


@pytest.mark.parametrize("served_by", ["serve", "up"])
def test_restore_refuses_while_maskmail_serves_the_database(tmp_path: Path, served_by: str) -> None:
    env, backup = _genuine(tmp_path)
    port = free_port()
    args = (
        ["serve", "--port", str(port)]
        if served_by == "serve"
        else ["up", "--api-port", str(port), "--smtp-port", str(free_port())]
    )
    with running(env, *args, port=port, log=tmp_path / "serve.log"):
        _refused(env, backup, "serves")
    restored = run_cli(env, "restore", str(backup))
    assert restored.returncode == 0, restored.stderr


def test_up_refuses_an_unknown_revision_in_one_line(tmp_path: Path) -> None:
    env, _ = _genuine(tmp_path)
    with closing(sqlite3.connect(tmp_path / "var" / "maskmail.db")) as db:
        db.execute("UPDATE alembic_version SET version_num = 'ffff'")
        db.commit()
    result = run_cli(env, "up", "--api-port", str(free_port()), "--smtp-port", str(free_port()))
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1 and "'ffff'" in result.stderr, result.stderr
