"""Applying migrations from code: ``maskmail db upgrade``, ``up`` and ``serve`` call this."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError

MIGRATIONS = Path(__file__).with_name("migrations")


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["url"] = url
    return config


class UnknownRevision(Exception):
    """The database is at a revision these migrations do not have; nothing was changed."""


def upgrade(url: str) -> None:
    """Bring the database to the newest schema; doing it twice changes nothing."""
    try:
        command.upgrade(alembic_config(url), "head")
    except CommandError as exc:
        # Alembic's words for it: "Can't locate revision identified by '…'".
        raise UnknownRevision(
            f"cannot migrate the database: {exc}; it was made by a newer maskmail or "
            "altered by hand; run that version, or restore a backup taken by this one"
        ) from exc


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config("")).get_current_head()
    if head is None:
        raise RuntimeError("no migrations found")
    return head


def current_revision(connection: object) -> str | None:
    """The revision a (sync) connection's database is at (the readiness probe)."""
    return MigrationContext.configure(connection).get_current_revision()  # type: ignore[arg-type]
