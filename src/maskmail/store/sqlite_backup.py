"""Copies of a SQLite database taken while it serves, and putting one back.

Both directions use SQLite's online backup API: the copy is one consistent snapshot
even while other processes write (WAL lets the writers go on), and a restore takes the
database's locks like any writer, so no process ever reads half of it.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from contextlib import closing
from pathlib import Path

from sqlalchemy.engine import make_url

from maskmail.store.schema_check import SchemaMismatch, check_schema
from maskmail.store.sqlite_lock import ServingConflict, nobody_serving

BUSY_TIMEOUT = 30.0


class BackupError(Exception):
    """A backup or restore that cannot be done; nothing was changed."""


def database_file(url: str) -> Path:
    """The file behind a SQLite URL; PostgreSQL has its own tools (docs/operations.md)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        raise BackupError(
            "backup and restore are for SQLite; for PostgreSQL use pg_dump and pg_restore "
            "(docs/operations.md)"
        )
    if not parsed.database or parsed.database == ":memory:":
        raise BackupError("the database is in memory; there is nothing to back up")
    return Path(parsed.database)


def _open(path: Path, mode: str) -> sqlite3.Connection:
    # A URI with a mode, so that a mistyped path is an error, not a new empty database.
    uri = f"{path.resolve().as_uri()}?mode={mode}"
    try:
        return sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT)
    except sqlite3.Error as exc:
        raise BackupError(f"cannot open {path}: {exc}") from exc


def _copy_beside(source: sqlite3.Connection, target: Path) -> None:
    """Write a copy next to ``target``, then rename it there: never half a file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}.partial")
    try:
        with closing(sqlite3.connect(partial)) as copy:
            source.backup(copy)
            copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
        with partial.open("rb") as written:
            os.fsync(written.fileno())
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


def backup(database: Path, target: Path) -> None:
    """A consistent copy of ``database`` at ``target`` (replaced if it exists)."""
    if target.resolve() == database.resolve():
        raise BackupError("the backup would overwrite the database itself")
    with closing(_open(database, "ro")) as source:
        try:
            _copy_beside(source, target)
        except sqlite3.Error as exc:
            raise BackupError(f"the backup failed: {exc}") from exc


def check_backup(path: Path) -> None:
    """Refuse a file that is not a sound maskmail database (docs/operations.md)."""
    with closing(_open(path, "ro")) as conn:
        try:
            [verdict] = conn.execute("PRAGMA integrity_check").fetchone()
        except sqlite3.Error as exc:
            raise BackupError(f"{path} is not a SQLite database: {exc}") from exc
        if verdict != "ok":
            raise BackupError(f"{path} is damaged: {verdict}")
        try:
            check_schema(conn, path)
        except SchemaMismatch as exc:
            raise BackupError(str(exc)) from exc


def restore(source: Path, database: Path) -> None:
    """Put the backup at ``source`` in place of ``database``'s contents, while no
    maskmail process serves it."""
    check_backup(source)
    database.parent.mkdir(parents=True, exist_ok=True)
    try:
        with (
            nobody_serving(database),
            closing(_open(source, "ro")) as backup_conn,
            closing(_open(database, "rwc")) as live,
        ):
            backup_conn.backup(live)
    except ServingConflict as exc:
        raise BackupError(str(exc)) from exc
    except sqlite3.Error as exc:
        raise BackupError(f"the restore failed: {exc}") from exc
