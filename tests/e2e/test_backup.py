"""`maskmail backup` and `restore` on SQLite under write load, and the user commands."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import subprocess
import threading
import time
from contextlib import closing
from pathlib import Path

import asyncpg
import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.e2e.conftest import Deployment
from tests.sink import HOST
from tests.support import free_port, fresh_database, run_cli, running

pytestmark = pytest.mark.slow
TABLES = ("users", "api_keys", "addresses", "tombstones", "alembic_version")
OPERATIONS = Path(__file__).parents[2] / "docs" / "operations.md"


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
        [(counted,)] = db.execute("SELECT sum(n) FROM address_counts").fetchall()
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


def pg_dump_commands(tmp: Path, database: str) -> str:
    """The shell blocks of docs/operations.md's PostgreSQL backup section, pointed at
    ``database`` and ``tmp`` (and the test server's own role) instead of the doc's."""
    section = OPERATIONS.read_text().split("### PostgreSQL", 1)[1].split("\n## ", 1)[0]
    script = "\n".join(re.findall(r"```sh\n(.*?)```", section, re.S))
    assert "pg_dump" in script and "pg_restore" in script
    for old, new in (
        ("/var/backups/maskmail/", f"{tmp}/"),
        ("$(date +%F)", "nightly"),
        ("2026-11-24", "nightly"),
        ("--owner=maskmail", "--owner=postgres"),
        ("--role=maskmail", "--role=postgres"),
    ):
        assert old in script, old
        script = script.replace(old, new)
    # What is left of the name is the database's: `pg_dump ... maskmail`, `--dbname=maskmail`.
    return re.sub(r"(?<![\w/.-])maskmail(?![\w.-])", database, script)


async def pg_rows(url: str) -> dict[str, list[tuple[object, ...]]]:
    conn = await asyncpg.connect(url.replace("+asyncpg", ""))
    try:
        names = await conn.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
        )
        return {
            row["tablename"]: sorted(
                tuple(r) for r in await conn.fetch(f'SELECT * FROM "{row["tablename"]}"')
            )
            for row in names
        }
    finally:
        await conn.close()


def test_pg_dump_and_pg_restore_as_the_doc_shows(tmp_path: Path) -> None:
    with fresh_database("postgres", tmp_path) as url:
        env = {"MASKMAIL_DATABASE_URL": url, "MASKMAIL_DATA_DIR": str(tmp_path / "var")}
        assert run_cli(env, "db", "upgrade").returncode == 0
        assert run_cli(env, "user", "add", "pg@example.com").returncode == 0
        key = run_cli(env, "key", "create", "pg@example.com").stdout.strip()
        port = free_port()
        with running(env, "serve", "--port", str(port), port=port, log=tmp_path / "serve.log"):
            for _ in range(5):
                made = httpx.post(
                    f"http://{HOST}:{port}/v3/relay/addresses",
                    headers={"Authorization": f"Bearer {key}"},
                )
                assert made.status_code == 200, made.text
        before = asyncio.run(pg_rows(url))
        target = make_url(url)
        assert target.database
        script = pg_dump_commands(tmp_path, target.database)
        pg_env = {
            **os.environ,
            "PGHOST": target.host or "127.0.0.1",
            "PGPORT": str(target.port or 5432),
            "PGUSER": target.username or "postgres",
        }
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            env=pg_env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "maskmail-nightly.dump").stat().st_size > 0
        after = asyncio.run(pg_rows(url))
        assert len(before["addresses"]) == 5 and after == before
        listed = run_cli(env, "user", "list")
    assert listed.stdout == "pg@example.com\t5\n"
