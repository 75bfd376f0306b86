"""The admin page: who is an admin, disabled users, last sign-in, limits per user, and
the audit log of admin actions.

``users`` gains ``is_admin`` and ``disabled`` (both off), ``last_sign_in_time`` (null:
never signed in since this revision) and three limits, ``max_addresses``,
``max_mailboxes`` and ``max_domains``: null follows the server's setting
(``MASKMAIL_MAX_*_PER_USER``), a number is this user's own. ``audit_log`` keeps one row
per admin action; it has no foreign key, so that the record outlives the users it names.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

IdType = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_USER_COLUMNS = (
    "is_admin",
    "disabled",
    "last_sign_in_time",
    "max_addresses",
    "max_mailboxes",
    "max_domains",
)


def upgrade() -> None:
    # Plain ALTERs, never a batch copy of users: on SQLite the copy drops the old table,
    # and with foreign keys on, that deletes what hangs off it (as 0006 says).
    op.add_column(
        "users", sa.Column("is_admin", sa.Boolean, nullable=False, server_default=sa.false())
    )
    op.add_column(
        "users", sa.Column("disabled", sa.Boolean, nullable=False, server_default=sa.false())
    )
    op.add_column("users", sa.Column("last_sign_in_time", sa.BigInteger, nullable=True))
    for limit in ("max_addresses", "max_mailboxes", "max_domains"):
        op.add_column("users", sa.Column(limit, sa.Integer, nullable=True))
    op.create_table(
        "audit_log",
        sa.Column("id", IdType, primary_key=True, autoincrement=True),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.Column("actor_id", IdType, nullable=True),
        sa.Column("actor", sa.String(320), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("target_id", IdType, nullable=True),
        sa.Column("target", sa.String(320), nullable=False),
        sa.Column("detail", sa.String(200), nullable=False, server_default=""),
        sa.Column("client", sa.String(64), nullable=False, server_default=""),
        sa.PrimaryKeyConstraint("id", name="pk_audit_log"),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table("audit_log")
    for name in reversed(_USER_COLUMNS):
        op.execute(f"ALTER TABLE users DROP COLUMN {name}")
