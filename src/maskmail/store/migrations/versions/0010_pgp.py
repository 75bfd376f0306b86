"""OpenPGP keys on mailboxes: forwards to a mailbox with a key are encrypted to it.

One key per mailbox at most, in a table of its own: deleting the key deletes the row, and
deleting the mailbox deletes its key. ``failed_time`` is set when encrypting to the key
failed and the owner was told; it keeps them from being told again on every retry, until
a forward is encrypted again or the key changes.

Revision ID: 0010
Revises: 0008
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

IdType = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "mailbox_keys",
        sa.Column("mailbox_id", IdType, nullable=False),
        sa.Column("public_key", sa.Text, nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("encrypt_subject", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.Column("expires_time", sa.BigInteger, nullable=True),
        sa.Column("failed_time", sa.BigInteger, nullable=True),
        sa.ForeignKeyConstraint(
            ["mailbox_id"],
            ["mailboxes.id"],
            name="fk_mailbox_keys_mailbox_id_mailboxes",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("mailbox_id", name="pk_mailbox_keys"),
    )


def downgrade() -> None:
    op.drop_table("mailbox_keys")
