"""`maskmail backup` and `restore` on SQLite under write load, and the user commands."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import Deployment
from tests.sink import HOST
from tests.support import free_port, run_cli, running

pytestmark = pytest.mark.slow
TABLES = ("users", "api_keys", "addresses", "tombstones", "alembic_version")


def dump(path: Path) -> dict[str, list[tuple[object, ...]]]:
    with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
        return {t: sorted(db.execute(f"SELECT * FROM {t}").fetchall()) for t in TABLES}


def test_backup_under_write_load_restores_to_a_consistent_copy(tmp_path: Path) -> None:
    data = tmp_path / "var"
    env = {"MASKMAIL_DATA_DIR": str(data), "MASKMAIL_RATE_LIMIT": "100000/minute"}
    assert run_cli(env, "db", "upgrade").returncode == 0
    assert run_cli(env, "user", "add", "load@example.com").returncode == 0
    key = run_cli(env, "key", "create", "load@example.com").stdout.strip()
    port = free_port()
    stop = threading.Event()
    made: list[int] = []

    def write() -> None:
        with httpx.Client(
            base_url=f"http://{HOST}:{port}", headers={"Authorization": f"Bearer {key}"}
        ) as api:
            while not stop.is_set():
                response = api.post("/v3/relay/addresses")
                assert response.status_code == 200, response.text
                made.append(response.json()["id"])

    with running(env, "serve", "--port", str(port), port=port, log=tmp_path / "serve.log"):
        writers = [threading.Thread(target=write) for _ in range(3)]
        for writer in writers:
            writer.start()
        while len(made) < 20:
            time.sleep(0.05)
        backed_up = run_cli(env, "backup", str(tmp_path / "nightly.db"))
        before = len(made)
        while len(made) < before + 20:
            time.sleep(0.05)
        stop.set()
        for writer in writers:
            writer.join()
    assert backed_up.returncode == 0, backed_up.stderr
    copy, live = dump(tmp_path / "nightly.db"), dump(data / "maskmail.db")
    # The copy is the live database as it was at one instant: a prefix of the addresses,
    # each row as it is now, with the trigger-kept count agreeing with the rows.
    ids = [row[0] for row in copy["addresses"]]
    assert 20 <= len(ids) < len(live["addresses"])
    assert ids == list(range(1, len(ids) + 1))
    assert copy["addresses"] == live["addresses"][: len(ids)]
    with closing(sqlite3.connect(f"{(tmp_path / 'nightly.db').as_uri()}?mode=ro", uri=True)) as db:
        [(counted,)] = db.execute("SELECT address_count FROM users").fetchall()
    assert counted == len(ids)
    assert len(copy["tombstones"]) >= len(ids)

    elsewhere = {**env, "MASKMAIL_DATA_DIR": str(tmp_path / "restored")}
    restored = run_cli(elsewhere, "restore", str(tmp_path / "nightly.db"))
    assert restored.returncode == 0, restored.stderr
    assert dump(tmp_path / "restored" / "maskmail.db") == copy
    listed = run_cli(elsewhere, "user", "list")
    assert listed.stdout == f"load@example.com\t{len(ids)}\n"


def test_restore_refuses_what_is_not_a_maskmail_database(tmp_path: Path) -> None:
    env = {"MASKMAIL_DATA_DIR": str(tmp_path / "var")}
    assert run_cli(env, "db", "upgrade").returncode == 0
    before = (tmp_path / "var" / "maskmail.db").read_bytes()
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    for path in (junk, tmp_path / "missing.db"):
        result = run_cli(env, "restore", str(path))
        assert result.returncode == 1 and result.stderr.startswith("maskmail: ")
        assert len(result.stderr.splitlines()) == 1
    assert (tmp_path / "var" / "maskmail.db").read_bytes() == before


def test_user_commands(deployment: Deployment) -> None:
    key = deployment.user_with_key("fay@example.com")
    deployment.cli("user", "add", "gus@example.com")
    port = free_port()
    headers = {"Authorization": f"Bearer {key}"}
    with (
        running(deployment.env, "serve", "--port", str(port), port=port, log=deployment.tmp / "s"),
        httpx.Client(base_url=f"http://{HOST}:{port}", headers=headers) as api,
    ):
        made = [api.post("/v3/relay/addresses").json()["full_address"] for _ in range(3)]
    assert deployment.cli("user", "list") == "fay@example.com\t3\ngus@example.com\t0\n"
    exported = json.loads(deployment.cli("user", "export", "fay@example.com"))
    assert sorted(a["full_address"] for a in exported["addresses"]) == sorted(made)
    deployment.cli("user", "delete", "fay@example.com")
    assert deployment.cli("user", "list") == "gus@example.com\t0\n"
    gone = run_cli(deployment.env, "user", "export", "fay@example.com")
    assert gone.returncode == 1 and "no such user" in gone.stderr
    if "postgresql" in deployment.env["MASKMAIL_DATABASE_URL"]:
        refused = run_cli(deployment.env, "backup", str(deployment.tmp / "b.db"))
        assert refused.returncode == 1 and "pg_dump" in refused.stderr
