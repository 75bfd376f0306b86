"""Users, API keys, relay addresses and tombstones.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("email_key", sa.String(320), nullable=False),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_users"),
        sa.UniqueConstraint("email_key", name="uq_users_email_key"),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", Id, autoincrement=True),
        sa.Column("user_id", Id, nullable=False),
        sa.Column("key_hash", sa.String(64), nullable=False),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.Column("revoked_time", sa.BigInteger, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_api_keys"),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_api_keys_user_id_users", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("key_hash", name="uq_api_keys_key_hash"),
    )
    op.create_table(
        "addresses",
        sa.Column("id", Id, autoincrement=True),
        sa.Column("user_id", Id, nullable=False),
        sa.Column("address", sa.String(64), nullable=False),
        sa.Column("domain", sa.String(255), nullable=False),
        sa.Column("subdomain", sa.String(63), nullable=True),
        sa.Column("enabled", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("block_spam", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("description", sa.String(64), nullable=False, server_default=""),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.Column("updated_time", sa.BigInteger, nullable=True),
        sa.Column("num_forwarded", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("num_blocked", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("num_replied", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("num_spam", sa.BigInteger, nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("id", name="pk_addresses"),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_addresses_user_id_users", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("address", "domain", name="uq_addresses_address_domain"),
    )
    op.create_index("ix_addresses_user_id_id", "addresses", ["user_id", "id"])
    op.create_table(
        "tombstones",
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("hash", name="pk_tombstones"),
    )


def downgrade() -> None:
    op.drop_table("tombstones")
    op.drop_index("ix_addresses_user_id_id", table_name="addresses")
    op.drop_table("addresses")
    op.drop_table("api_keys")
    op.drop_table("users")
