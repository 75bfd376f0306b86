"""The operator's view of whole accounts: list users, export one user's data, delete a user."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import addresses as rules
from maskmail.core.errors import UserNotFound
from maskmail.store import mailboxes, tombstones
from maskmail.store.accounts import user_id_for_email
from maskmail.store.addresses import list_addresses
from maskmail.store.tables import (
    addresses,
    api_keys,
    bounces,
    daily_activity,
    reverse_aliases,
    users,
    web_sessions,
)


@dataclass(frozen=True, slots=True)
class UserSummary:
    email: str
    created_time: int
    addresses: int


async def list_users(conn: AsyncConnection) -> list[UserSummary]:
    """Every user with the number of addresses they have now, oldest user first."""
    counted = (
        select(users.c.email, users.c.created_time, func.count(addresses.c.id))
        .select_from(users.outerjoin(addresses, addresses.c.user_id == users.c.id))
        .group_by(users.c.id, users.c.email, users.c.created_time)
        .order_by(users.c.id)
    )
    rows = (await conn.execute(counted)).all()
    return [UserSummary(str(row[0]), int(row[1]), int(row[2])) for row in rows]


async def export_user(conn: AsyncConnection, email: str) -> dict[str, Any]:
    """Everything kept about one user, as JSON-ready values: settings, mailboxes, addresses with
    their counters, contacts (the outside senders behind reverse aliases), and when each
    API key was made or revoked (never the key or its hash)."""
    user_id = await user_id_for_email(conn, email)
    user = (
        await conn.execute(
            select(users.c.email, users.c.created_time, users.c.show_name).where(
                users.c.id == user_id
            )
        )
    ).one()
    owned = await list_addresses(conn, user_id)
    contacts = (
        await conn.execute(
            select(
                reverse_aliases.c.address_id,
                reverse_aliases.c.sender,
                reverse_aliases.c.alias,
                reverse_aliases.c.domain,
                reverse_aliases.c.created_time,
            )
            .join(addresses, addresses.c.id == reverse_aliases.c.address_id)
            .where(addresses.c.user_id == user_id)
            .order_by(reverse_aliases.c.id)
        )
    ).all()
    key_rows = (
        await conn.execute(
            select(api_keys.c.created_time, api_keys.c.revoked_time)
            .where(api_keys.c.user_id == user_id)
            .order_by(api_keys.c.id)
        )
    ).all()
    return {
        "email": user.email,
        "created_time": user.created_time,
        "settings": {"show_name": bool(user.show_name)},
        "mailboxes": [m.json() for m in await mailboxes.list_mailboxes(conn, user_id)],
        "addresses": [
            {**asdict(address), "full_address": address.full_address} for address in owned
        ],
        "contacts": [
            {
                "address_id": row.address_id,
                "sender": row.sender,
                "reverse_alias": f"{row.alias}@{row.domain}",
                "created_time": row.created_time,
            }
            for row in contacts
        ],
        "api_keys": [
            {"created_time": row.created_time, "revoked_time": row.revoked_time} for row in key_rows
        ],
    }


async def delete_user(conn: AsyncConnection, email: str) -> int:
    """Remove the user, their keys, dashboard sessions, addresses with their contacts,
    bounces and daily counts; return how many addresses went. Every address keeps its
    tombstone, so none is handed out again."""
    user_id = await user_id_for_email(conn, email)
    owned = (
        await conn.execute(
            select(addresses.c.address, addresses.c.domain, addresses.c.subdomain).where(
                addresses.c.user_id == user_id
            )
        )
    ).all()
    await tombstones.keep(conn, (rules.tombstone(rules.full_address(*row)) for row in owned))
    # Deleted in order, rather than left to ON DELETE CASCADE, so that the outcome does
    # not rest on a connection's foreign-key setting.
    theirs = select(addresses.c.id).where(addresses.c.user_id == user_id).scalar_subquery()
    await conn.execute(delete(bounces).where(bounces.c.address_id.in_(theirs)))
    await conn.execute(delete(reverse_aliases).where(reverse_aliases.c.address_id.in_(theirs)))
    await conn.execute(delete(daily_activity).where(daily_activity.c.address_id.in_(theirs)))
    await conn.execute(delete(addresses).where(addresses.c.user_id == user_id))
    await conn.execute(delete(api_keys).where(api_keys.c.user_id == user_id))
    await conn.execute(delete(web_sessions).where(web_sessions.c.user_id == user_id))
    result = await conn.execute(delete(users).where(users.c.id == user_id))
    if result.rowcount != 1:
        raise UserNotFound(f"no such user: {email}")
    return len(owned)
