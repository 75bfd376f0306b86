"""``maskmail db``: the database schema."""

from __future__ import annotations

import typer

from maskmail.cli.common import done, migrated

app = typer.Typer(help="Database schema.", no_args_is_help=True)


@app.command("upgrade")
def db_upgrade() -> None:
    """Apply migrations; safe to repeat."""
    from maskmail.store.migrate import head_revision

    migrated(data_dir=False)
    done(f"the database is at the latest schema (revision {head_revision()})")
