"""Two-factor sign-in: TOTP secrets, recovery codes, security keys, pending ceremonies.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

IdType = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _user(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["user_id"], ["users.id"], name=f"fk_{table}_user_id_users", ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "totp_secrets",
        sa.Column("user_id", IdType, nullable=False),
        sa.Column("secret", sa.String(64), nullable=False),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.Column("enabled_time", sa.BigInteger, nullable=True),
        sa.Column("last_step", sa.BigInteger, nullable=True),
        sa.PrimaryKeyConstraint("user_id", name="pk_totp_secrets"),
        _user("totp_secrets"),
    )
    op.create_table(
        "recovery_codes",
        sa.Column("user_id", IdType, nullable=False),
        sa.Column("code_hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "code_hash", name="pk_recovery_codes"),
        _user("recovery_codes"),
    )
    op.create_table(
        "security_keys",
        sa.Column("id", IdType, nullable=False, autoincrement=True),
        sa.Column("user_id", IdType, nullable=False),
        sa.Column("credential_id", sa.String(1400), nullable=False),
        sa.Column("public_key", sa.Text, nullable=False),
        sa.Column("sign_count", sa.BigInteger, nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.Column("last_used_time", sa.BigInteger, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_security_keys"),
        sa.UniqueConstraint("credential_id", name="uq_security_keys_credential_id"),
        _user("security_keys"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_security_keys_user_id", "security_keys", ["user_id"])
    op.create_table(
        "two_factor_pending",
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("user_id", IdType, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("challenge", sa.String(128), nullable=True),
        sa.Column("failures", sa.Integer, nullable=False, server_default="0"),
        sa.Column("expires_time", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("token_hash", name="pk_two_factor_pending"),
        _user("two_factor_pending"),
    )
    op.create_index("ix_two_factor_pending_user_id", "two_factor_pending", ["user_id"])


def downgrade() -> None:
    for table in ("two_factor_pending", "security_keys", "recovery_codes", "totp_secrets"):
        op.drop_table(table)
