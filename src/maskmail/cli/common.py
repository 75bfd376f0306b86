"""What the command groups share: settings, one transaction, failures and plurals.

Nothing heavy is imported here at module level: ``maskmail --version`` and ``--help``
load this module, and SQLAlchemy, Alembic and pydantic are only needed once a command runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from maskmail.config import Settings

T = TypeVar("T")

Host = Annotated[str, typer.Option(help="Address to listen on.")]


class Fail(Exception):
    """A failure to report as one line on stderr."""


def settings() -> Settings:
    """The settings, read from the environment and the config file."""
    from maskmail.config import load_settings

    return load_settings()


def plural(count: int, one: str, many: str | None = None) -> str:
    """``1 address``, ``2 addresses``, ``0 users``."""
    return f"{count} {one if count == 1 else (many or one + 's')}"


def done(message: str) -> None:
    """Say what a command did, on stderr, so that stdout keeps only what a script reads."""
    typer.echo(message, err=True)


def in_transaction(config: Settings, work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
    """Run WORK in one transaction on a short-lived engine."""
    import asyncio

    from maskmail.store.engine import create_engine, transaction

    async def run() -> T:
        engine = create_engine(config.resolved_database_url, pool_size=1, timeout=config.db_timeout)
        try:
            async with transaction(engine) as conn:
                return await work(conn)
        finally:
            await engine.dispose()

    return asyncio.run(run())


def migrated(*, data_dir: bool) -> Settings:
    """Settings, once the data directory (when it is used) and the database are ready."""
    from maskmail.startup import check_data_dir, prepare_database

    config = settings()
    if data_dir or not config.database_url:
        check_data_dir(config)
    prepare_database(config)
    return config


def schema_behind(exc: Exception, config: Settings) -> str | None:
    """After a statement failed: one line asking for ``maskmail db upgrade`` when the
    database is not at this maskmail's schema, else None.

    Asked only on failure, so that a command on a current database pays for no check.
    """
    from sqlalchemy.exc import DBAPIError

    if not isinstance(exc, DBAPIError):
        return None
    from maskmail.store.migrate import current_revision, head_revision

    try:
        revision = in_transaction(config, lambda conn: conn.run_sync(current_revision))
    except Exception:
        return None
    head = head_revision()
    if revision == head:
        return None
    return (
        f"the database's schema is at {revision or 'no revision'}, this maskmail's at {head}; "
        "run maskmail db upgrade"
    )
