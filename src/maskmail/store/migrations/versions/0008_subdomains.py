"""Relay subdomains: one per user at most, and the user's choice to make new addresses on it.

A local part is now unique per host, not per domain: ``shop@alice.relay.example`` and
``shop@bob.relay.example`` are two addresses. The unique key becomes (address, domain,
subdomain), with no subdomain as ''. SQLite cannot drop a table's constraint, so there
the table is rebuilt, keeping the rows of the tables that refer to it (which DROP TABLE
would delete through their cascades) and its count triggers (migration 0005).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25
"""

import re
from collections.abc import Callable, Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

IdType = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

OLD_UNIQUE = "uq_addresses_address_domain"
NEW_UNIQUE = "uq_addresses_address_domain_subdomain"
CREATE_NEW_UNIQUE = (
    f"CREATE UNIQUE INDEX {NEW_UNIQUE} ON addresses (address, domain, coalesce(subdomain, ''))"
)
# As migration 0005 made them (that module's name starts with a digit: not importable).
SQLITE_TRIGGERS = (
    "CREATE TRIGGER addresses_counted_insert AFTER INSERT ON addresses BEGIN "
    "UPDATE users SET address_count = address_count + 1 WHERE id = NEW.user_id; END",
    "CREATE TRIGGER addresses_counted_delete AFTER DELETE ON addresses BEGIN "
    "UPDATE users SET address_count = address_count - 1 WHERE id = OLD.user_id; END",
)


def _rebuild_sqlite_addresses(edit: Callable[[str], str]) -> None:
    """Recreate ``addresses`` from its own CREATE statement as ``edit`` changes it, all
    rows, indexes and triggers kept, and the rows that refer to it kept too."""
    bind = op.get_bind()
    create = bind.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'addresses'"
    ).scalar_one()
    indexes = [
        row[0]
        for row in bind.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'addresses' "
            "AND sql IS NOT NULL AND name != 'uq_addresses_address_domain_subdomain'"
        )
    ]
    tables = [
        row[0]
        for row in bind.exec_driver_sql(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    children = [
        t
        for t in tables
        if any(
            fk[2] == "addresses" for fk in bind.exec_driver_sql(f"PRAGMA foreign_key_list('{t}')")
        )
    ]
    rebuilt = re.sub(r'^CREATE TABLE "?addresses"?', "CREATE TABLE addresses_rebuilt", edit(create))
    op.execute(rebuilt)
    op.execute("INSERT INTO addresses_rebuilt SELECT * FROM addresses")
    for child in children:
        op.execute(f"CREATE TEMP TABLE kept_{child} AS SELECT * FROM {child}")  # noqa: S608
    op.execute("DROP TABLE addresses")
    op.execute("ALTER TABLE addresses_rebuilt RENAME TO addresses")
    for child in children:
        op.execute(f"INSERT INTO {child} SELECT * FROM kept_{child}")  # noqa: S608
        op.execute(f"DROP TABLE kept_{child}")
    for index in indexes:
        op.execute(index)
    for trigger in SQLITE_TRIGGERS:
        op.execute(trigger)


def _without_old_unique(create: str) -> str:
    return re.sub(rf",\s*CONSTRAINT {OLD_UNIQUE} UNIQUE \(address, domain\)", "", create)


def _with_old_unique(create: str) -> str:
    return create.rstrip().removesuffix(")").rstrip() + (
        f", \n\tCONSTRAINT {OLD_UNIQUE} UNIQUE (address, domain)\n)"
    )


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_sqlite_addresses(_without_old_unique)
    else:
        op.drop_constraint(OLD_UNIQUE, "addresses", type_="unique")
    op.execute(CREATE_NEW_UNIQUE)
    op.create_table(
        "subdomains",
        sa.Column("id", IdType, primary_key=True, autoincrement=True),
        sa.Column("user_id", IdType, nullable=False),
        sa.Column("subdomain", sa.String(63), nullable=False),
        sa.Column("catch_all", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name="fk_subdomains_user_id_users",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_subdomains"),
        sa.UniqueConstraint("user_id", name="uq_subdomains_user_id"),
        sa.UniqueConstraint("subdomain", name="uq_subdomains_subdomain"),
    )
    # A plain ALTER, never a batch copy of users (see 0005: the copy would cascade).
    op.add_column(
        "users",
        sa.Column("use_relay_subdomain", sa.Boolean, nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    op.execute("ALTER TABLE users DROP COLUMN use_relay_subdomain")
    op.drop_table("subdomains")
    # Fails while one local part exists at two hosts: those must be deleted first.
    op.execute(f"DROP INDEX {NEW_UNIQUE}")
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_sqlite_addresses(_with_old_unique)
    else:
        op.create_unique_constraint(OLD_UNIQUE, "addresses", ["address", "domain"])
