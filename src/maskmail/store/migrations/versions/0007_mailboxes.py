"""Several mailboxes per user, and the mailboxes each address forwards to.

Every existing user's address (``users.email``) becomes their mailbox one: verified and
the default. An address with no rows in ``address_mailboxes`` forwards to its owner's
default mailbox, so existing addresses need no rows and keep forwarding as before. A
bounce of one copy of a message sent to several mailboxes counts against that mailbox
(``bounces.mailbox_id``).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

IdType = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

BACKFILL = sa.text(
    "INSERT INTO mailboxes (user_id, email, email_key, verified, is_default, created_time) "
    "SELECT id, email, email_key, :yes, :yes, created_time FROM users"
).bindparams(yes=True)


def upgrade() -> None:
    op.create_table(
        "mailboxes",
        sa.Column("id", IdType, primary_key=True, autoincrement=True),
        sa.Column("user_id", IdType, nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("email_key", sa.String(320), nullable=False),
        sa.Column("verified", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("is_default", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=True),
        sa.Column("code_hash", sa.String(64), nullable=True),
        sa.Column("expires_time", sa.BigInteger, nullable=True),
        sa.Column("failed_codes", sa.Integer, nullable=False, server_default="0"),
        sa.Column("paused_time", sa.BigInteger, nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_mailboxes_user_id_users", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_mailboxes"),
        sa.UniqueConstraint("user_id", "email_key", name="uq_mailboxes_user_id_email_key"),
        sa.UniqueConstraint("token_hash", name="uq_mailboxes_token_hash"),
    )
    op.create_table(
        "address_mailboxes",
        sa.Column("address_id", IdType, nullable=False),
        sa.Column("mailbox_id", IdType, nullable=False),
        sa.ForeignKeyConstraint(
            ["address_id"],
            ["addresses.id"],
            name="fk_address_mailboxes_address_id_addresses",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["mailbox_id"],
            ["mailboxes.id"],
            name="fk_address_mailboxes_mailbox_id_mailboxes",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("address_id", "mailbox_id", name="pk_address_mailboxes"),
    )
    op.create_index("ix_address_mailboxes_mailbox_id", "address_mailboxes", ["mailbox_id"])
    # A plain ALTER, never a batch copy of bounces. No foreign key: a deleted mailbox's
    # bounces stay listed under their address.
    op.add_column("bounces", sa.Column("mailbox_id", IdType, nullable=True))
    op.create_index(
        "ix_bounces_mailbox_id_received_time", "bounces", ["mailbox_id", "received_time"]
    )
    op.execute(BACKFILL)


def downgrade() -> None:
    op.drop_index("ix_bounces_mailbox_id_received_time", "bounces")
    op.execute("ALTER TABLE bounces DROP COLUMN mailbox_id")
    op.drop_index("ix_address_mailboxes_mailbox_id", "address_mailboxes")
    op.drop_table("address_mailboxes")
    op.drop_table("mailboxes")
