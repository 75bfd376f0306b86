"""Alembic environment: runs maskmail's migrations on the engine maskmail itself uses."""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection

from maskmail.store.engine import create_engine, is_sqlite
from maskmail.store.tables import metadata

# Any constant works; it only has to be the same for every maskmail process.
PG_MIGRATION_LOCK = 7_041_996_113


def _run(connection: Connection) -> None:
    sqlite = connection.dialect.name == "sqlite"
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=sqlite,
        compare_type=True,
    )
    with context.begin_transaction():
        if not sqlite:
            # Two processes upgrading at once would race on the version table.
            connection.execute(text(f"SELECT pg_advisory_xact_lock({PG_MIGRATION_LOCK})"))
        context.run_migrations()


async def _online(url: str) -> None:
    engine = create_engine(url, pool_size=1)
    try:
        async with engine.connect() as conn:
            await conn.run_sync(_run)
            await conn.commit()
    finally:
        await engine.dispose()


def main() -> None:
    url = context.config.attributes.get("url") or context.config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no database URL given to the migrations")
    if context.is_offline_mode():
        context.configure(url=url, target_metadata=metadata, render_as_batch=is_sqlite(url))
        with context.begin_transaction():
            context.run_migrations()
        return
    asyncio.run(_online(url))


main()
