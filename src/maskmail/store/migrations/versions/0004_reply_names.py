"""Each user chooses whether their display name goes out with their replies.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A plain ALTER, never a batch copy of users: on SQLite the copy drops the old table,
    # and with foreign keys on, that deletes every user's addresses and keys.
    op.add_column(
        "users", sa.Column("show_name", sa.Boolean, nullable=False, server_default=sa.false())
    )


def downgrade() -> None:
    op.execute("ALTER TABLE users DROP COLUMN show_name")
