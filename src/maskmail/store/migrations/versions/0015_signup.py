"""Sign-up: invitations, and accounts waiting for their first mailbox to be verified.

``invitations`` keeps the single-use sign-up links (the SHA-256 of each token, when it
expires, who made it, when and by whom it was used, whether it was revoked).
``pending_signups`` keeps, for an account made by sign-up, its unverified first mailbox,
the hash of the sign-up page's ticket and the password, until the mailbox is verified.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

IdType = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "invitations",
        sa.Column("id", IdType, primary_key=True, autoincrement=True),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.Column("expires_time", sa.BigInteger, nullable=False),
        sa.Column("created_by", IdType, nullable=True),
        sa.Column("used_time", sa.BigInteger, nullable=True),
        sa.Column("used_by", IdType, nullable=True),
        sa.Column("revoked_time", sa.BigInteger, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_invitations"),
        sa.UniqueConstraint("token_hash", name="uq_invitations_token_hash"),
        sa.ForeignKeyConstraint(
            ["created_by"], ["users.id"], name="fk_invitations_created_by_users", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["used_by"], ["users.id"], name="fk_invitations_used_by_users", ondelete="CASCADE"
        ),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "pending_signups",
        sa.Column("user_id", IdType, nullable=False),
        sa.Column("mailbox_id", IdType, nullable=False),
        sa.Column("ticket_hash", sa.String(64), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=False),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("user_id", name="pk_pending_signups"),
        sa.UniqueConstraint("mailbox_id", name="uq_pending_signups_mailbox_id"),
        sa.UniqueConstraint("ticket_hash", name="uq_pending_signups_ticket_hash"),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_pending_signups_user_id_users", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["mailbox_id"],
            ["mailboxes.id"],
            name="fk_pending_signups_mailbox_id_mailboxes",
            ondelete="CASCADE",
        ),
    )


def downgrade() -> None:
    op.drop_table("pending_signups")
    op.drop_table("invitations")
