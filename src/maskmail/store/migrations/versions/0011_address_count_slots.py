"""Address counts move from ``users`` to a table of their own, in slots.

Migration 0005 kept each user's total in ``users.address_count``. Every new address then
updated its owner's row, and held that row's lock until its transaction committed, so
concurrent creations for one user waited for each other's commits, and the one row
rewritten thousands of times a second swelled with dead versions that slowed every read
of ``users`` (the key check among them). Now PostgreSQL adds to one of eight slots of the
user, chosen by the backend's process id, so concurrent writers hold different rows; a
removal subtracts from the user's lowest slot. A slot may go below zero; the sum is
the total. SQLite has one writer at a time and uses slot 0 alone.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

IdType = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

# ORDER BY user_id: a statement for several users locks their slots in one order, so two
# such statements cannot deadlock.
PG_FUNCTION = """
CREATE OR REPLACE FUNCTION maskmail_count_addresses() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO address_counts (user_id, slot, n)
        SELECT user_id, pg_backend_pid() % 8, count(*) FROM added
        GROUP BY user_id ORDER BY user_id
        ON CONFLICT (user_id, slot) DO UPDATE SET n = address_counts.n + excluded.n;
    ELSE
        UPDATE address_counts c SET n = c.n - d.n
        FROM (SELECT user_id, count(*) AS n FROM removed GROUP BY user_id) d
        WHERE c.user_id = d.user_id
          AND c.slot = (SELECT min(slot) FROM address_counts m WHERE m.user_id = d.user_id);
    END IF;
    RETURN NULL;
END
$$
"""
# 0005's function, for the downgrade.
PG_OLD_FUNCTION = """
CREATE OR REPLACE FUNCTION maskmail_count_addresses() RETURNS trigger LANGUAGE plpgsql AS $$
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
SQLITE_DROP = (
    "DROP TRIGGER addresses_counted_insert",
    "DROP TRIGGER addresses_counted_delete",
)
SQLITE_TRIGGERS = (
    "CREATE TRIGGER addresses_counted_insert AFTER INSERT ON addresses BEGIN "
    "INSERT INTO address_counts (user_id, slot, n) VALUES (NEW.user_id, 0, 1) "
    "ON CONFLICT (user_id, slot) DO UPDATE SET n = n + 1; END",
    "CREATE TRIGGER addresses_counted_delete AFTER DELETE ON addresses BEGIN "
    "UPDATE address_counts SET n = n - 1 WHERE user_id = OLD.user_id AND slot = 0; END",
)
# As migrations 0005 and 0008 made them, for the downgrade.
SQLITE_OLD_TRIGGERS = (
    "CREATE TRIGGER addresses_counted_insert AFTER INSERT ON addresses BEGIN "
    "UPDATE users SET address_count = address_count + 1 WHERE id = NEW.user_id; END",
    "CREATE TRIGGER addresses_counted_delete AFTER DELETE ON addresses BEGIN "
    "UPDATE users SET address_count = address_count - 1 WHERE id = OLD.user_id; END",
)


def upgrade() -> None:
    op.create_table(
        "address_counts",
        sa.Column("user_id", IdType, nullable=False),
        sa.Column("slot", sa.Integer, nullable=False, autoincrement=False),
        sa.Column("n", sa.BigInteger, nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name="fk_address_counts_user_id_users",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", "slot", name="pk_address_counts"),
    )
    # New triggers, then the copy, with writers of addresses kept out until this commits
    # (SQLite has one writer at a time), so no address is counted twice or missed.
    if _is_pg():
        op.execute("LOCK TABLE addresses IN SHARE MODE")
        op.execute(PG_FUNCTION)
    else:
        for statement in (*SQLITE_DROP, *SQLITE_TRIGGERS):
            op.execute(statement)
    op.execute(
        "INSERT INTO address_counts (user_id, slot, n) "
        "SELECT id, 0, address_count FROM users WHERE address_count <> 0"
    )
    # A plain DROP COLUMN on both: a batch copy of users on SQLite would drop the table,
    # and with foreign keys on, every user's addresses with it.
    op.execute("ALTER TABLE users DROP COLUMN address_count")


def downgrade() -> None:
    op.add_column(
        "users", sa.Column("address_count", sa.BigInteger, nullable=False, server_default="0")
    )
    if _is_pg():
        op.execute("LOCK TABLE addresses IN SHARE MODE")
        op.execute(PG_OLD_FUNCTION)
    else:
        for statement in (*SQLITE_DROP, *SQLITE_OLD_TRIGGERS):
            op.execute(statement)
    op.execute(
        "UPDATE users SET address_count = "
        "(SELECT coalesce(sum(n), 0) FROM address_counts WHERE address_counts.user_id = users.id)"
    )
    op.drop_table("address_counts")


def _is_pg() -> bool:
    return bool(op.get_bind().dialect.name == "postgresql")
