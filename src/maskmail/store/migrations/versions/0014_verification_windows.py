"""Verification messages sent, so that their limits survive deleting a mailbox.

``verification_mails`` keeps, for each verification message, its user, the SHA-256 of
the lower-cased address it went to and when; adding a mailbox counts these rows in a
day, per address and per user. Messages sent before this revision are not counted.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

IdType = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "verification_mails",
        sa.Column("user_id", IdType, nullable=False),
        sa.Column("address_hash", sa.String(64), nullable=False),
        sa.Column("sent_time", sa.BigInteger, nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name="fk_verification_mails_user_id_users",
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        "ix_verification_mails_user_id_sent_time",
        "verification_mails",
        ["user_id", "sent_time"],
    )


def downgrade() -> None:
    op.drop_table("verification_mails")
