"""``maskmail backup`` and ``maskmail restore``: copies of the SQLite database."""

from __future__ import annotations

from pathlib import Path

from maskmail.cli.common import done, settings


def backup(path: Path) -> None:
    """Write a consistent copy of the SQLite database to PATH, while it serves."""
    from maskmail.store import sqlite_backup

    database = sqlite_backup.database_file(settings().resolved_database_url)
    sqlite_backup.backup(database, path)
    done(f"backed up {database} to {path}")


def restore(path: Path) -> None:
    """Put the SQLite backup at PATH in place of the database (stop maskmail first)."""
    from maskmail.store import sqlite_backup

    database = sqlite_backup.database_file(settings().resolved_database_url)
    sqlite_backup.restore(path, database)
    done(f"restored {database} from {path}")
