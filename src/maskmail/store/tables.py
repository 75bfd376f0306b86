"""The schema, in SQLAlchemy Core. Alembic migrations must describe the same tables."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    UniqueConstraint,
    false,
    true,
)

# SQLite only makes INTEGER PRIMARY KEY an alias of the rowid; BIGINT would break autoincrement.
IdType = BigInteger().with_variant(Integer(), "sqlite")

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

users = Table(
    "users",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("email", String(320), nullable=False),
    # The mailbox in lower case: mailboxes that differ only in case are one user.
    Column("email_key", String(320), nullable=False, unique=True),
    Column("created_time", BigInteger, nullable=False),
    # Whether the user's display name goes out with their replies (off: only the address).
    Column("show_name", Boolean, nullable=False, server_default=false()),
    # How many addresses the user has: kept by triggers on addresses (migration 0005).
    Column("address_count", BigInteger, nullable=False, server_default="0"),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("user_id", IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("created_time", BigInteger, nullable=False),
    Column("revoked_time", BigInteger, nullable=True),
)

addresses = Table(
    "addresses",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("user_id", IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("address", String(64), nullable=False),
    Column("domain", String(255), nullable=False),
    Column("subdomain", String(63), nullable=True),
    Column("enabled", Boolean, nullable=False, server_default=true()),
    Column("block_spam", Boolean, nullable=False, server_default=false()),
    Column("description", String(64), nullable=False, server_default=""),
    Column("created_time", BigInteger, nullable=False),
    Column("updated_time", BigInteger, nullable=True),
    Column("num_forwarded", BigInteger, nullable=False, server_default="0"),
    Column("num_blocked", BigInteger, nullable=False, server_default="0"),
    Column("num_replied", BigInteger, nullable=False, server_default="0"),
    Column("num_spam", BigInteger, nullable=False, server_default="0"),
    # Set when hard bounces paused forwarding (and cleared when the owner enables it again);
    # the API shows a pause as enabled=false, so the SPEC's object keeps its fields.
    Column("paused_time", BigInteger, nullable=True),
    UniqueConstraint("address", "domain"),
    # Listing walks one owner's rows in id order; this index serves it, page by page.
    Index(None, "user_id", "id"),
)

# One row for every address ever handed out, kept after deletion, so none is reused.
tombstones = Table(
    "tombstones",
    metadata,
    Column("hash", String(64), primary_key=True),
    Column("created_time", BigInteger, nullable=False),
)

# One row for each pair of relay address and outside sender: the address the owner's
# replies go to. Deleting the relay address deletes its reverse aliases.
reverse_aliases = Table(
    "reverse_aliases",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("address_id", IdType, ForeignKey("addresses.id", ondelete="CASCADE"), nullable=False),
    Column("sender", String(320), nullable=False),
    Column("alias", String(64), nullable=False, unique=True),
    Column("domain", String(255), nullable=False),
    Column("created_time", BigInteger, nullable=False),
    UniqueConstraint("address_id", "sender"),
)

# Delivery status notifications that came back to a relay address's signed bounce address.
# ``forgiven`` marks the bounces before the owner lifted a pause: they no longer count.
bounces = Table(
    "bounces",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("address_id", IdType, ForeignKey("addresses.id", ondelete="CASCADE"), nullable=False),
    Column("received_time", BigInteger, nullable=False),
    Column("kind", String(8), nullable=False),
    Column("status", String(16), nullable=False),
    Column("forgiven", Boolean, nullable=False, server_default=false()),
    # The threshold counts one address's recent bounces; the listing reads its latest.
    Index(None, "address_id", "received_time"),
)

COUNTERS = ("num_forwarded", "num_blocked", "num_replied", "num_spam")
