"""Each user's number of addresses, kept by the database on every insert and delete.

A page carries the owner's total. Counting it per request walked all of the owner's
index entries, and on a small
table PostgreSQL's estimate made it a scan of every address (docs/benchmarks.md).
Triggers keep the count whatever writes the rows (API, mail plane, bulk loads, cascades),
in the writer's own transaction.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# PostgreSQL: one UPDATE per statement, grouped by owner, so a bulk load of a million
# rows is ten thousand updates, not a million.
PG_FUNCTION = """
CREATE FUNCTION maskmail_count_addresses() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE users u SET address_count = u.address_count + d.n
        FROM (SELECT user_id, count(*) AS n FROM added GROUP BY user_id) d
        WHERE u.id = d.user_id;
    ELSE
        UPDATE users u SET address_count = u.address_count - d.n
        FROM (SELECT user_id, count(*) AS n FROM removed GROUP BY user_id) d
        WHERE u.id = d.user_id;
    END IF;
    RETURN NULL;
END
$$
"""
PG_TRIGGERS = (
    "CREATE TRIGGER addresses_counted_insert AFTER INSERT ON addresses "
    "REFERENCING NEW TABLE AS added FOR EACH STATEMENT "
    "EXECUTE FUNCTION maskmail_count_addresses()",
    "CREATE TRIGGER addresses_counted_delete AFTER DELETE ON addresses "
    "REFERENCING OLD TABLE AS removed FOR EACH STATEMENT "
    "EXECUTE FUNCTION maskmail_count_addresses()",
)
# SQLite has row triggers only.
SQLITE_TRIGGERS = (
    "CREATE TRIGGER addresses_counted_insert AFTER INSERT ON addresses BEGIN "
    "UPDATE users SET address_count = address_count + 1 WHERE id = NEW.user_id; END",
    "CREATE TRIGGER addresses_counted_delete AFTER DELETE ON addresses BEGIN "
    "UPDATE users SET address_count = address_count - 1 WHERE id = OLD.user_id; END",
)
BACKFILL = (
    "UPDATE users SET address_count = "
    "(SELECT count(*) FROM addresses WHERE addresses.user_id = users.id)"
)


def upgrade() -> None:
    # Plain ALTERs, never a batch copy of users: on SQLite the copy drops the old table,
    # and with foreign keys on, that deletes every user's addresses and keys.
    op.add_column(
        "users", sa.Column("address_count", sa.BigInteger, nullable=False, server_default="0")
    )
    # Triggers first: creating them locks the table against writers until this
    # migration commits, so no address is added between the count and the trigger.
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_FUNCTION)
        statements = PG_TRIGGERS
    else:
        statements = SQLITE_TRIGGERS
    for statement in statements:
        op.execute(statement)
    op.execute(BACKFILL)


def downgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for name in ("addresses_counted_insert", "addresses_counted_delete"):
        op.execute(f"DROP TRIGGER IF EXISTS {name}" + (" ON addresses" if postgresql else ""))
    if postgresql:
        op.execute("DROP FUNCTION IF EXISTS maskmail_count_addresses()")
    op.execute("ALTER TABLE users DROP COLUMN address_count")
