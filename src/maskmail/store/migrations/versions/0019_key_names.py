"""API keys get a name, given by their owner when a key is made (the dashboard's keys
page, ``maskmail key create --name``), to tell keys apart in the list. Keys made before
this revision have none.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("api_keys", sa.Column("name", sa.String(64), nullable=True))


def downgrade() -> None:
    # SQLite drops the column in place (no batch copy of the table), so api_keys keeps
    # the AUTOINCREMENT that 0013 gave it, and 0013's downgrade finds its CREATE as made.
    op.drop_column("api_keys", "name")
