"""Password reset links and the browsers each user has signed in from.

``password_resets`` keeps the SHA-256 of each mailed link's token, its user and when it
expires; using a link deletes its row. ``known_devices`` keeps, per user, the SHA-256 of
each browser's device cookie and when it was last seen; a sign-in from a browser not
listed mails the user a notice (docs/dashboard.md).

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

IdType = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "password_resets",
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("user_id", IdType, nullable=False),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.Column("expires_time", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("token_hash", name="pk_password_resets"),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name="fk_password_resets_user_id_users",
            ondelete="CASCADE",
        ),
    )
    op.create_index("ix_password_resets_user_id", "password_resets", ["user_id"])
    op.create_table(
        "known_devices",
        sa.Column("user_id", IdType, nullable=False),
        sa.Column("device_hash", sa.String(64), nullable=False),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.Column("last_seen_time", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("user_id", "device_hash", name="pk_known_devices"),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name="fk_known_devices_user_id_users",
            ondelete="CASCADE",
        ),
    )


def downgrade() -> None:
    op.drop_table("known_devices")
    op.drop_index("ix_password_resets_user_id", "password_resets")
    op.drop_table("password_resets")
