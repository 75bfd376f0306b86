"""Limits on what a user's catch-all and subdomain names may take.

``first_mail_addresses`` marks each address made on first mail, with its owner and time,
so that an owner's rate and cap of such addresses are counted in the database that every
mail-plane process shares; ``subdomain_names`` keeps when each user took a subdomain name
(claim or rename), so that names cannot be burnt by the hundred. Addresses made on first
mail before this revision are not marked: they count toward neither limit.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

IdType = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "first_mail_addresses",
        sa.Column("address_id", IdType, nullable=False),
        sa.Column("user_id", IdType, nullable=False),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.ForeignKeyConstraint(
            ["address_id"],
            ["addresses.id"],
            name="fk_first_mail_addresses_address_id_addresses",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name="fk_first_mail_addresses_user_id_users",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("address_id", name="pk_first_mail_addresses"),
    )
    op.create_index(
        "ix_first_mail_addresses_user_id_created_time",
        "first_mail_addresses",
        ["user_id", "created_time"],
    )
    op.create_table(
        "subdomain_names",
        sa.Column("user_id", IdType, nullable=False),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name="fk_subdomain_names_user_id_users",
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        "ix_subdomain_names_user_id_created_time",
        "subdomain_names",
        ["user_id", "created_time"],
    )


def downgrade() -> None:
    op.drop_table("subdomain_names")
    op.drop_table("first_mail_addresses")
