"""Bounces: what came back to each relay address, and when hard bounces paused it.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.add_column("addresses", sa.Column("paused_time", sa.BigInteger, nullable=True))
    op.create_table(
        "bounces",
        sa.Column("id", Id, autoincrement=True),
        sa.Column("address_id", Id, nullable=False),
        sa.Column("received_time", sa.BigInteger, nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("forgiven", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.PrimaryKeyConstraint("id", name="pk_bounces"),
        sa.ForeignKeyConstraint(
            ["address_id"],
            ["addresses.id"],
            name="fk_bounces_address_id_addresses",
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        "ix_bounces_address_id_received_time", "bounces", ["address_id", "received_time"]
    )


def downgrade() -> None:
    op.drop_index("ix_bounces_address_id_received_time", table_name="bounces")
    op.drop_table("bounces")
    with op.batch_alter_table("addresses") as batch:
        batch.drop_column("paused_time")
