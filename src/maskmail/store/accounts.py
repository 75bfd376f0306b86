"""Users and their API keys: made, checked, listed, marked used, revoked."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Table,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import keys
from maskmail.core.errors import UserExists, UserNotFound
from maskmail.store import mailboxes
from maskmail.store.clock import now
from maskmail.store.driver import Driver
from maskmail.store.statements import Script, Statement
from maskmail.store.tables import api_keys, metadata, users

# The recognisable prefix and four characters of the random part: enough to tell a
# user's keys apart, 24 bits of the key's 256.
PREFIX_LENGTH = len(keys.PREFIX) + 4


@dataclass(frozen=True, slots=True)
class KeyInfo:
    id: int
    prefix: str
    created_time: int
    last_used_time: int | None
    # Its owner's name for it; None when none was given.
    name: str | None = None


@dataclass(frozen=True, slots=True)
class Owner:
    """The caller behind an API key."""

    user_id: int
    key_id: int


async def add_user(conn: AsyncConnection, email: str, *, first_mailbox: bool = True) -> int:
    """The user, named by ``email``, which is also their mailbox one (made verified here,
    unless ``first_mailbox`` is False: sign-up adds it unverified, services/signup.py)."""
    created = now()
    try:
        async with conn.begin_nested():
            result = await conn.execute(
                insert(users)
                .values(email=email, email_key=email.lower(), created_time=created)
                .returning(users.c.id)
            )
    except IntegrityError as exc:
        raise UserExists(f"a user with that email already exists: {email}") from exc
    user_id = int(result.scalar_one())
    if first_mailbox:
        await mailboxes.add_first(conn, user_id, email, created)
    return user_id


async def user_id_for_email(conn: AsyncConnection, email: str) -> int:
    found = await conn.scalar(select(users.c.id).where(users.c.email_key == email.lower()))
    if found is None:
        raise UserNotFound(f"no such user: {email}")
    return int(found)


async def user_email(conn: AsyncConnection, user_id: int) -> str:
    found = await conn.scalar(select(users.c.email).where(users.c.id == user_id))
    if found is None:
        raise UserNotFound(f"no user with id {user_id}")
    return str(found)


async def set_show_name(conn: AsyncConnection, email: str, show: bool) -> None:
    """The user's choice: send their display name with replies, or only the address."""
    result = await conn.execute(
        update(users).where(users.c.email_key == email.lower()).values(show_name=show)
    )
    if result.rowcount != 1:
        raise UserNotFound(f"no such user: {email}")


async def set_password_hash(conn: AsyncConnection, user_id: int, password_hash: str) -> None:
    """The dashboard password's new hash (``sessions.set_password`` ends the sessions)."""
    result = await conn.execute(
        update(users).where(users.c.id == user_id).values(password_hash=password_hash)
    )
    if result.rowcount != 1:
        raise UserNotFound(f"no user with id {user_id}")


async def set_use_relay_subdomain(conn: AsyncConnection, user_id: int, use: bool) -> None:
    """Whether new addresses go on the owner's subdomain (``store.subdomains`` checks
    that there is one)."""
    await conn.execute(update(users).where(users.c.id == user_id).values(use_relay_subdomain=use))


async def delete_user_rows(conn: AsyncConnection, user_id: int) -> bool:
    """Delete the user and every row in every table that leads to them through foreign
    keys; False when there is no such user.

    The one write here to other modules' tables: it is ON DELETE CASCADE done by hand,
    children first and the user last, so that the outcome does not rest on a
    connection's foreign-key setting, and a table added later is covered without an
    edit here (``store.users_admin.delete_user`` keeps the tombstones first).
    """
    for table in reversed(metadata.sorted_tables):
        theirs = _theirs(table, user_id)
        if theirs is not None and table is not users:
            await conn.execute(delete(table).where(theirs))
    result = await conn.execute(delete(users).where(users.c.id == user_id))
    return bool(result.rowcount == 1)


def _theirs(table: Table, user_id: int) -> ColumnElement[bool] | None:
    """The rows of ``table`` that lead to the user through its foreign keys; None when
    no row of it can."""
    if table is users:
        return users.c.id == user_id
    ways = []
    for fk in table.foreign_keys:
        parent = fk.column.table
        if parent is users:
            ways.append(fk.parent == user_id)
        elif isinstance(parent, Table) and (through := _theirs(parent, user_id)) is not None:
            ways.append(fk.parent.in_(select(fk.column).where(through)))
    return or_(*ways) if ways else None


async def count_users(conn: AsyncConnection) -> int:
    return int(await conn.scalar(select(func.count()).select_from(users)) or 0)


async def add_key(
    conn: AsyncConnection,
    user_id: int,
    key_hash: str,
    prefix: str | None = None,
    *,
    name: str | None = None,
) -> int:
    """Store a key by its hash; ``prefix`` and ``name`` (checked by the caller:
    ``services/api_keys.py``) label it in the owner's list of keys."""
    result = await conn.execute(
        insert(api_keys)
        .values(
            user_id=user_id, key_hash=key_hash, key_prefix=prefix, name=name, created_time=now()
        )
        .returning(api_keys.c.id)
    )
    return int(result.scalar_one())


async def create_key(conn: AsyncConnection, user_id: int, *, name: str | None = None) -> str:
    """A new key for the user, labelled with its prefix and ``name``; the plaintext is
    returned once and never stored."""
    key = keys.generate_key()
    await add_key(conn, user_id, keys.hash_key(key), key[:PREFIX_LENGTH], name=name)
    return key


async def live_keys(conn: AsyncConnection, user_id: int) -> list[KeyInfo]:
    """The user's keys that are not revoked, newest first."""
    rows = await conn.execute(
        select(
            api_keys.c.id,
            api_keys.c.key_prefix,
            api_keys.c.created_time,
            api_keys.c.last_used_time,
            api_keys.c.name,
        )
        .where(api_keys.c.user_id == user_id, api_keys.c.revoked_time.is_(None))
        .order_by(api_keys.c.id.desc())
    )
    return [
        KeyInfo(
            int(r[0]), r[1] or keys.PREFIX, int(r[2]), None if r[3] is None else int(r[3]), r[4]
        )
        for r in rows
    ]


async def revoke_key(conn: AsyncConnection, key_hash: str) -> bool:
    """Revoke the key; False when no live key has that hash."""
    result = await conn.execute(
        update(api_keys)
        .where(api_keys.c.key_hash == key_hash, api_keys.c.revoked_time.is_(None))
        .values(revoked_time=now())
    )
    return result.rowcount == 1


async def revoke_own_key(conn: AsyncConnection, user_id: int, key_id: int) -> bool:
    """Revoke one of the user's keys; False when the id is not a live key of theirs."""
    key_hash = await conn.scalar(
        select(api_keys.c.key_hash).where(api_keys.c.id == key_id, api_keys.c.user_id == user_id)
    )
    return key_hash is not None and await revoke_key(conn, str(key_hash))


_MARK_USED = Statement.from_core(
    update(api_keys)
    .where(api_keys.c.key_hash == bindparam("key_hash"))
    .values(last_used_time=bindparam("when")),
    "when",
    "key_hash",
)


def mark_used(uses: Iterable[tuple[str, int]]) -> Script[None]:
    """Record each key's last use, (key hash, when); the caller notes a key at most once
    a minute and writes off the request path (api/key_use.py)."""
    for key_hash, when in uses:
        yield _MARK_USED, (when, key_hash)


# The one key check, every door's: the owner of a live (unrevoked) key, and the key's id;
# a disabled user's keys are not live. Text, because the listing and creation statements
# embed it (store/listing.py); never answered from a cache, so a revoked key, or a
# disabled user's, stops at once.
LIVE_KEY = (
    "SELECT user_id, id FROM api_keys WHERE key_hash = ? AND revoked_time IS NULL "
    "AND NOT EXISTS (SELECT 1 FROM users d WHERE d.id = api_keys.user_id AND d.disabled)"
)
_OWNER_FOR_KEY = text(LIVE_KEY.replace("?", ":key_hash"))
_OWNER_FOR_KEY_ON_DRIVER = Statement.portable(LIVE_KEY)


async def owner_for_key(conn: AsyncConnection | Driver, key_hash: str) -> Owner | None:
    """The key's owner, on whichever connection the caller holds: a request's SQLAlchemy
    transaction, or a driver connection (creating an address on the driver)."""
    row: Sequence[Any] | None
    if isinstance(conn, AsyncConnection):
        row = (await conn.execute(_OWNER_FOR_KEY, {"key_hash": key_hash})).first()
    else:
        found = await conn.rows(_OWNER_FOR_KEY_ON_DRIVER, key_hash)
        row = found[0] if found else None
    return None if row is None else Owner(user_id=int(row[0]), key_id=int(row[1]))


# The admin page's writes (services/admin.py runs them, each with its audit row).


@dataclass(frozen=True, slots=True)
class UserLimits:
    """One user's own limits; None follows the server's setting (MASKMAIL_MAX_*)."""

    addresses: int | None = None
    mailboxes: int | None = None
    domains: int | None = None


_LIMIT_COLUMNS = (users.c.max_addresses, users.c.max_mailboxes, users.c.max_domains)


async def set_admin(conn: AsyncConnection, user_id: int, admin: bool) -> None:
    """Make the user an admin of the dashboard's admin page, or no longer one."""
    await _set(conn, user_id, is_admin=admin)


async def is_admin(conn: AsyncConnection, user_id: int) -> bool:
    """True for an admin who is not disabled (asked on every admin request)."""
    found = await conn.scalar(
        select(users.c.id).where(
            users.c.id == user_id, users.c.is_admin.is_(True), users.c.disabled.is_(False)
        )
    )
    return found is not None


async def set_disabled(conn: AsyncConnection, user_id: int, disabled: bool) -> None:
    """Disable the user or enable them again. The key check (``LIVE_KEY``), the session
    check (``store.sessions``) and the mail plane's recipient look-up
    (``store.mailflow``) each read ``disabled`` in their own statement, so it holds on
    the next request or message; ``sessions.end_all`` removes the sessions as well."""
    await _set(conn, user_id, disabled=disabled)


async def set_limits(conn: AsyncConnection, user_id: int, limits: UserLimits) -> None:
    await _set(
        conn,
        user_id,
        max_addresses=limits.addresses,
        max_mailboxes=limits.mailboxes,
        max_domains=limits.domains,
    )


async def limits_of(conn: AsyncConnection, user_id: int) -> UserLimits:
    """The user's own limits (None: the server's setting)."""
    row = (await conn.execute(select(*_LIMIT_COLUMNS).where(users.c.id == user_id))).first()
    if row is None:
        raise UserNotFound(f"no user with id {user_id}")
    return UserLimits(row[0], row[1], row[2])


async def mark_signed_in(conn: AsyncConnection, user_id: int, when: int) -> None:
    """The time of the user's latest sign-in, shown on the admin page."""
    await conn.execute(update(users).where(users.c.id == user_id).values(last_sign_in_time=when))


async def _set(conn: AsyncConnection, user_id: int, **values: Any) -> None:
    result = await conn.execute(update(users).where(users.c.id == user_id).values(**values))
    if result.rowcount != 1:
        raise UserNotFound(f"no user with id {user_id}")
