"""Reverse aliases: one stable, unguessable address per relay address and outside sender.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "reverse_aliases",
        sa.Column("id", Id, autoincrement=True),
        sa.Column("address_id", Id, nullable=False),
        sa.Column("sender", sa.String(320), nullable=False),
        sa.Column("alias", sa.String(64), nullable=False),
        sa.Column("domain", sa.String(255), nullable=False),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_reverse_aliases"),
        sa.ForeignKeyConstraint(
            ["address_id"],
            ["addresses.id"],
            name="fk_reverse_aliases_address_id_addresses",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("alias", name="uq_reverse_aliases_alias"),
        sa.UniqueConstraint("address_id", "sender", name="uq_reverse_aliases_address_id_sender"),
    )


def downgrade() -> None:
    op.drop_table("reverse_aliases")
