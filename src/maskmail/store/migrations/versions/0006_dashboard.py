"""The web dashboard: passwords, sessions, when each API key was last used, and daily
counts of what happened to each address's mail.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

IdType = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # Plain ALTERs, never a batch copy of users or api_keys: on SQLite the copy drops the
    # old table, and with foreign keys on, that deletes what hangs off it.
    op.add_column("users", sa.Column("password_hash", sa.String(255), nullable=True))
    op.add_column("api_keys", sa.Column("last_used_time", sa.BigInteger, nullable=True))
    op.add_column("api_keys", sa.Column("key_prefix", sa.String(16), nullable=True))
    op.create_table(
        "web_sessions",
        sa.Column("id", IdType, primary_key=True, autoincrement=True),
        sa.Column(
            "user_id",
            IdType,
            sa.ForeignKey("users.id", ondelete="CASCADE", name="fk_web_sessions_user_id_users"),
            nullable=False,
        ),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.Column("expires_time", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_web_sessions"),
        sa.UniqueConstraint("token_hash", name="uq_web_sessions_token_hash"),
    )
    op.create_index("ix_web_sessions_user_id", "web_sessions", ["user_id"])
    op.create_table(
        "daily_activity",
        sa.Column(
            "address_id",
            IdType,
            sa.ForeignKey(
                "addresses.id", ondelete="CASCADE", name="fk_daily_activity_address_id_addresses"
            ),
            nullable=False,
        ),
        sa.Column("day", sa.Integer, nullable=False),
        sa.Column("num_forwarded", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("num_blocked", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("num_replied", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("num_spam", sa.BigInteger, nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("address_id", "day", name="pk_daily_activity"),
    )


def downgrade() -> None:
    op.drop_table("daily_activity")
    op.drop_index("ix_web_sessions_user_id", "web_sessions")
    op.drop_table("web_sessions")
    op.execute("ALTER TABLE api_keys DROP COLUMN key_prefix")
    op.execute("ALTER TABLE api_keys DROP COLUMN last_used_time")
    op.execute("ALTER TABLE users DROP COLUMN password_hash")
