"""Custom domains: a user's own domain, its DNS checks and its DKIM key.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

IdType = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
CHECKS = ("ownership_ok", "mx_ok", "spf_ok", "dkim_ok", "dmarc_ok")


def upgrade() -> None:
    op.create_table(
        "custom_domains",
        sa.Column("id", IdType, primary_key=True, autoincrement=True),
        sa.Column("user_id", IdType, nullable=False),
        sa.Column("domain", sa.String(253), nullable=False),
        sa.Column("verified", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("catch_all", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("ownership_token", sa.String(64), nullable=False),
        sa.Column("dkim_selector", sa.String(63), nullable=False),
        sa.Column("dkim_private_key", sa.Text, nullable=False),
        sa.Column("dkim_txt", sa.Text, nullable=False),
        *(
            sa.Column(name, sa.Boolean, nullable=False, server_default=sa.false())
            for name in CHECKS
        ),
        sa.Column("created_time", sa.BigInteger, nullable=False),
        sa.Column("checked_time", sa.BigInteger, nullable=True),
        sa.Column("warned_time", sa.BigInteger, nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_custom_domains_user_id_users", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_custom_domains"),
        sa.UniqueConstraint("domain", name="uq_custom_domains_domain"),
    )
    op.create_index("ix_custom_domains_user_id", "custom_domains", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_custom_domains_user_id", "custom_domains")
    op.drop_table("custom_domains")
