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
    Text,
    UniqueConstraint,
    false,
    func,
    literal,
    true,
)

# SQLite only makes INTEGER PRIMARY KEY an alias of the rowid; BIGINT would break autoincrement.
# Tables with such an id set ``sqlite_autoincrement``: SQLite then never hands out a deleted
# row's id again (migration 0013), as PostgreSQL's sequences never do.
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
    # The dashboard password, argon2id (migration 0006); null: no dashboard sign-in.
    Column("password_hash", String(255), nullable=True),
    # New addresses are made on the user's relay subdomain (Locker's use_relay_subdomain).
    Column("use_relay_subdomain", Boolean, nullable=False, server_default=false()),
    sqlite_autoincrement=True,
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("user_id", IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("created_time", BigInteger, nullable=False),
    Column("revoked_time", BigInteger, nullable=True),
    # Written at most once a minute per key and process (api/key_use.py).
    Column("last_used_time", BigInteger, nullable=True),
    # The key's first characters, shown to tell keys apart (null: made before 0006).
    Column("key_prefix", String(16), nullable=True),
    # Its owner's name for it (null: none given, or made before 0019).
    Column("name", String(64), nullable=True),
    sqlite_autoincrement=True,
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
    # Listing walks one owner's rows in id order; this index serves it, page by page.
    Index(None, "user_id", "id"),
    sqlite_autoincrement=True,
)

# A local part is unique per host: at the domain (no subdomain, as '') or a subdomain.
Index(
    "uq_addresses_address_domain_subdomain",
    addresses.c.address,
    addresses.c.domain,
    func.coalesce(addresses.c.subdomain, literal("")),
    unique=True,
)

# A user's relay subdomain (at most one), under the relay's domain. ``catch_all``: mail to
# an unknown local part there creates that address.
subdomains = Table(
    "subdomains",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column(
        "user_id",
        IdType,
        ForeignKey("users.id", ondelete="CASCADE"),
        nullable=False,
        unique=True,
    ),
    Column("subdomain", String(63), nullable=False, unique=True),
    Column("catch_all", Boolean, nullable=False, server_default=true()),
    Column("created_time", BigInteger, nullable=False),
    sqlite_autoincrement=True,
)

# The names each user took for a subdomain (claims and renames), by time only: the rate
# of ``MASKMAIL_SUBDOMAIN_NAMES_PER_DAY`` holds across every process and a deletion.
subdomain_names = Table(
    "subdomain_names",
    metadata,
    Column("user_id", IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("created_time", BigInteger, nullable=False),
    Index(None, "user_id", "created_time"),
)

# Addresses made on first mail (catch-all), with their owner and time: the owner's rate
# and cap (MASKMAIL_FIRST_MAIL_PER_HOUR, MASKMAIL_FIRST_MAIL_MAX) count these rows, in the
# database that every mail-plane process shares. Deleting the address deletes its row.
first_mail_addresses = Table(
    "first_mail_addresses",
    metadata,
    Column("address_id", IdType, ForeignKey("addresses.id", ondelete="CASCADE"), primary_key=True),
    Column("user_id", IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("created_time", BigInteger, nullable=False),
    Index(None, "user_id", "created_time"),
)

# Domains users own and receive mail at (docs/api.md, "Custom domains"). ``verified``:
# the ownership TXT record was found once, and from then on mail is accepted; the five
# ``*_ok`` are the latest check of each record. The DKIM key signs mail from the domain.
custom_domains = Table(
    "custom_domains",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("user_id", IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("domain", String(253), nullable=False, unique=True),
    Column("verified", Boolean, nullable=False, server_default=false()),
    Column("catch_all", Boolean, nullable=False, server_default=true()),
    Column("ownership_token", String(64), nullable=False),
    Column("dkim_selector", String(63), nullable=False),
    Column("dkim_private_key", Text, nullable=False),
    # The DKIM record's value (v=DKIM1; k=rsa; p=...), as the owner publishes it.
    Column("dkim_txt", Text, nullable=False),
    Column("ownership_ok", Boolean, nullable=False, server_default=false()),
    Column("mx_ok", Boolean, nullable=False, server_default=false()),
    Column("spf_ok", Boolean, nullable=False, server_default=false()),
    Column("dkim_ok", Boolean, nullable=False, server_default=false()),
    Column("dmarc_ok", Boolean, nullable=False, server_default=false()),
    Column("created_time", BigInteger, nullable=False),
    Column("checked_time", BigInteger, nullable=True),
    # Set when the owner was told that records went away; cleared once all pass again.
    Column("warned_time", BigInteger, nullable=True),
    Index(None, "user_id"),
    sqlite_autoincrement=True,
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
    sqlite_autoincrement=True,
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
    # Set when the bounce came back for one copy of a message sent to several mailboxes:
    # it counts against that mailbox, not the address (migration 0007).
    Column("mailbox_id", IdType, nullable=True),
    # The threshold counts one address's recent bounces; the listing reads its latest.
    Index(None, "address_id", "received_time"),
    Index(None, "mailbox_id", "received_time"),
    sqlite_autoincrement=True,
)

# The real mailboxes a user reads mail in. Mailbox one is the address given to
# ``maskmail user add`` (``users.email``, which stays the account's name). A new one is
# unverified until its owner follows the link or types the code mailed to it; only hashes
# of the two are kept. ``paused_time``: hard bounces stopped forwarding to it.
mailboxes = Table(
    "mailboxes",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("user_id", IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("email", String(320), nullable=False),
    Column("email_key", String(320), nullable=False),
    Column("verified", Boolean, nullable=False, server_default=false()),
    Column("is_default", Boolean, nullable=False, server_default=false()),
    Column("created_time", BigInteger, nullable=False),
    Column("token_hash", String(64), nullable=True, unique=True),
    Column("code_hash", String(64), nullable=True),
    Column("expires_time", BigInteger, nullable=True),
    Column("failed_codes", Integer, nullable=False, server_default="0"),
    Column("paused_time", BigInteger, nullable=True),
    UniqueConstraint("user_id", "email_key"),
    sqlite_autoincrement=True,
)

# The verification messages each user had sent, by time and the SHA-256 of the address
# (lower-cased; the address itself goes with its mailbox): the limits of
# MASKMAIL_MAILBOX_VERIFY_PER_ADDRESS and _PER_USER hold across deleting and re-adding a
# mailbox. Rows older than the window are deleted as new ones come.
verification_mails = Table(
    "verification_mails",
    metadata,
    Column("user_id", IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("address_hash", String(64), nullable=False),
    Column("sent_time", BigInteger, nullable=False),
    Index(None, "user_id", "sent_time"),
)

# The mailboxes an address forwards to; none means the owner's default mailbox, so
# deleting a mailbox leaves the addresses that used only it on the default one.
address_mailboxes = Table(
    "address_mailboxes",
    metadata,
    Column("address_id", IdType, ForeignKey("addresses.id", ondelete="CASCADE"), primary_key=True),
    Column("mailbox_id", IdType, ForeignKey("mailboxes.id", ondelete="CASCADE"), primary_key=True),
    Index(None, "mailbox_id"),
)

# A mailbox's OpenPGP key (docs/api.md, "PGP keys"): forwards to it are encrypted.
# ``failed_time``: encryption failed and the owner was told; cleared by a success or a
# new key, so they are told once, not on every retry.
mailbox_keys = Table(
    "mailbox_keys",
    metadata,
    Column("mailbox_id", IdType, ForeignKey("mailboxes.id", ondelete="CASCADE"), primary_key=True),
    Column("public_key", Text, nullable=False),
    Column("fingerprint", String(64), nullable=False),
    Column("encrypt_subject", Boolean, nullable=False, server_default=false()),
    Column("created_time", BigInteger, nullable=False),
    Column("expires_time", BigInteger, nullable=True),
    Column("failed_time", BigInteger, nullable=True),
)

# How many addresses each user has, kept by triggers on addresses (migration 0011), as
# counts in a few slots per user whose sum is the total (store/address_counts.py).
address_counts = Table(
    "address_counts",
    metadata,
    Column("user_id", IdType, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    Column("slot", Integer, primary_key=True, autoincrement=False),
    Column("n", BigInteger, nullable=False),
)

# Signed-in dashboard sessions; only the SHA-256 of the cookie's token is stored.
web_sessions = Table(
    "web_sessions",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("user_id", IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("created_time", BigInteger, nullable=False),
    Column("expires_time", BigInteger, nullable=False),
    Index(None, "user_id"),
    sqlite_autoincrement=True,
)

# The four counters per address and UTC day (days since the epoch), moved in the same
# statement or transaction as the address's own counters (store/addresses.count_mail).
daily_activity = Table(
    "daily_activity",
    metadata,
    Column("address_id", IdType, ForeignKey("addresses.id", ondelete="CASCADE"), primary_key=True),
    Column("day", Integer, primary_key=True),
    Column("num_forwarded", BigInteger, nullable=False, server_default="0"),
    Column("num_blocked", BigInteger, nullable=False, server_default="0"),
    Column("num_replied", BigInteger, nullable=False, server_default="0"),
    Column("num_spam", BigInteger, nullable=False, server_default="0"),
)

# Single-use sign-up links (MASKMAIL_SIGNUP=invite; docs/operations.md): only the SHA-256
# of the token is kept. ``created_by``: the admin who made it, null for the operator's
# command line. ``used_time`` and ``used_by`` are set by the one statement that redeems
# it, so that of two sign-ups with one link exactly one wins.
invitations = Table(
    "invitations",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("created_time", BigInteger, nullable=False),
    Column("expires_time", BigInteger, nullable=False),
    Column("created_by", IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=True),
    Column("used_time", BigInteger, nullable=True),
    Column("used_by", IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=True),
    Column("revoked_time", BigInteger, nullable=True),
    sqlite_autoincrement=True,
)

# Accounts made by sign-up whose first mailbox is not verified yet (docs/dashboard.md):
# the password waits here, so that the account cannot sign in before the mailbox is
# proved; ``ticket_hash`` is the SHA-256 of what the sign-up page's code form carries.
pending_signups = Table(
    "pending_signups",
    metadata,
    Column("user_id", IdType, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    Column(
        "mailbox_id",
        IdType,
        ForeignKey("mailboxes.id", ondelete="CASCADE"),
        nullable=False,
        unique=True,
    ),
    Column("ticket_hash", String(64), nullable=False, unique=True),
    Column("password_hash", String(255), nullable=False),
    Column("created_time", BigInteger, nullable=False),
)

# Password reset links (store/password_resets.py): the SHA-256 of each link's random
# token, never the token; a row is deleted when its link is used, so a link works once.
password_resets = Table(
    "password_resets",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("user_id", IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("created_time", BigInteger, nullable=False),
    Column("expires_time", BigInteger, nullable=False),
    Index(None, "user_id"),
)

# The browsers each user has signed in from (store/devices.py): the SHA-256 of the
# long-lived device cookie; a sign-in from any other browser is mailed to the user.
known_devices = Table(
    "known_devices",
    metadata,
    Column("user_id", IdType, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    Column("device_hash", String(64), primary_key=True),
    Column("created_time", BigInteger, nullable=False),
    Column("last_seen_time", BigInteger, nullable=False),
)

# Two-factor sign-in (migration 0017; services/two_factor.py). A user's TOTP secret:
# pending until a code confirms it (enabled_time null), then in force; last_step is the
# last time step a code was accepted for, so no code is taken twice.
totp_secrets = Table(
    "totp_secrets",
    metadata,
    Column("user_id", IdType, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    Column("secret", String(64), nullable=False),
    Column("created_time", BigInteger, nullable=False),
    Column("enabled_time", BigInteger, nullable=True),
    Column("last_step", BigInteger, nullable=True),
)

# Single-use recovery codes, by the SHA-256 of the user's id and the code; a used one is
# deleted.
recovery_codes = Table(
    "recovery_codes",
    metadata,
    Column("user_id", IdType, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    Column("code_hash", String(64), primary_key=True),
)

# WebAuthn security keys and passkeys: the credential's id and COSE public key
# (base64url), the signature counter it last showed, and the name its owner gave it.
security_keys = Table(
    "security_keys",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("user_id", IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("credential_id", String(1400), nullable=False, unique=True),
    Column("public_key", Text, nullable=False),
    Column("sign_count", BigInteger, nullable=False),
    Column("name", String(64), nullable=False),
    Column("created_time", BigInteger, nullable=False),
    Column("last_used_time", BigInteger, nullable=True),
    Index(None, "user_id"),
    sqlite_autoincrement=True,
)

# Short-lived, single-use states of a ceremony, found by the SHA-256 of a random token:
# a sign-in waiting for its second step (kind "sign-in", the token in its own cookie),
# or a security key being registered (kind "register"). The challenge is a WebAuthn
# ceremony's; failures count the wrong second steps of this one sign-in.
two_factor_pending = Table(
    "two_factor_pending",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("user_id", IdType, ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("challenge", String(128), nullable=True),
    Column("failures", Integer, nullable=False, server_default="0"),
    Column("expires_time", BigInteger, nullable=False),
    Index(None, "user_id"),
)

# The admin page (migration 0018): who may see it, who is disabled (their keys, sessions
# and addresses stop), the last sign-in, and limits of one user; a null limit follows the
# server's setting (MASKMAIL_MAX_*_PER_USER).
users.append_column(Column("is_admin", Boolean, nullable=False, server_default=false()))
users.append_column(Column("disabled", Boolean, nullable=False, server_default=false()))
users.append_column(Column("last_sign_in_time", BigInteger, nullable=True))
users.append_column(Column("max_addresses", Integer, nullable=True))
users.append_column(Column("max_mailboxes", Integer, nullable=True))
users.append_column(Column("max_domains", Integer, nullable=True))

# One row per admin action: who (the admin's id and email, or the operator at the
# command line), what, on whom (the account's id and email, as the admin saw them), a
# short detail, when and from which client. No foreign key: the record outlives the users
# it names. Never a password, key, token or any mailbox but the account's own email.
audit_log = Table(
    "audit_log",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("created_time", BigInteger, nullable=False),
    Column("actor_id", IdType, nullable=True),
    Column("actor", String(320), nullable=False),
    Column("action", String(32), nullable=False),
    Column("target_id", IdType, nullable=True),
    Column("target", String(320), nullable=False),
    Column("detail", String(200), nullable=False, server_default=""),
    Column("client", String(64), nullable=False, server_default=""),
    sqlite_autoincrement=True,
)
