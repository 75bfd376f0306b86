"""Whether a SQLite file's schema is exactly one that maskmail's migrations make.

A restored file runs with maskmail's rights: a trigger or view someone added to it would
run on every write, and a missing table or an unknown revision would surface later as
a 500 or a failed start. So the file is compared with a database freshly migrated to
the file's own revision (an older backup is one of ours too; ``up`` migrates it on).
"""

from __future__ import annotations

import re
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

from alembic import command
from alembic.script import ScriptDirectory

from maskmail.store.migrate import alembic_config

# SQLite's own bookkeeping (ANALYZE's statistics) is not part of what migrations make.
_INTERNAL = re.compile(r"sqlite_stat\d+")
_SPACE = re.compile(r"\s+")

Schema = frozenset[tuple[str, str, str, str]]


class SchemaMismatch(Exception):
    """The file is not a database maskmail's migrations make; nothing was changed."""


def known_revisions() -> frozenset[str]:
    script = ScriptDirectory.from_config(alembic_config(""))
    return frozenset(rev.revision for rev in script.walk_revisions())


def schema_of(conn: sqlite3.Connection) -> Schema:
    """Every table, index, trigger and view, with its SQL text (spacing and quoting aside)."""
    rows = conn.execute("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master")
    return frozenset(
        (kind, name, table, _SPACE.sub(" ", sql.replace('"', "")).strip())
        for kind, name, table, sql in rows
        if not _INTERNAL.fullmatch(name)
    )


def revision_of(conn: sqlite3.Connection, path: Path) -> str:
    try:
        found = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.Error as exc:
        raise SchemaMismatch(f"{path} is not a maskmail database ({exc})") from exc
    if len(found) != 1:
        raise SchemaMismatch(f"{path} is not a maskmail database (no single migration revision)")
    [(revision,)] = found
    if revision not in known_revisions():
        raise SchemaMismatch(
            f"{path} is at migration revision {revision!r}, which this maskmail does not "
            "make; restore a backup taken by this version or an older one"
        )
    return str(revision)


def migrated_schema(revision: str) -> Schema:
    """The schema of an empty database taken to ``revision`` by maskmail's migrations."""
    with tempfile.TemporaryDirectory(prefix="maskmail-schema-") as folder:
        fresh = Path(folder) / "fresh.db"
        command.upgrade(alembic_config(f"sqlite+aiosqlite:///{fresh}"), revision)
        with closing(sqlite3.connect(fresh)) as conn:
            return schema_of(conn)


def check_schema(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse ``conn``'s database unless its schema is exactly its revision's, naming
    at most a few of the differences."""
    revision = revision_of(conn, path)
    found, expected = schema_of(conn), migrated_schema(revision)
    if found == expected:
        return
    extra = sorted(f"{kind} {name}" for kind, name, *_ in found - expected)
    missing = sorted(f"{kind} {name}" for kind, name, *_ in expected - found)
    told = "; ".join(
        part
        for part in (
            f"not made by maskmail: {', '.join(extra[:5])}" if extra else "",
            f"missing or changed: {', '.join(missing[:5])}" if missing else "",
        )
        if part
    )
    raise SchemaMismatch(
        f"{path} does not have the schema maskmail's migrations make at revision "
        f"{revision} ({told}); refusing to restore it"
    )
