"""The operator's view of whole accounts: list users, export one user's data, delete a user."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import addresses as rules
from maskmail.core import reverse
from maskmail.core.errors import UserNotFound
from maskmail.store import accounts, mailboxes, tombstones
from maskmail.store import subdomains as relay_subdomains
from maskmail.store.accounts import user_id_for_email
from maskmail.store.address_counts import total_of
from maskmail.store.addresses import list_addresses
from maskmail.store.tables import (
    addresses,
    api_keys,
    reverse_aliases,
    users,
)


@dataclass(frozen=True, slots=True)
class UserSummary:
    email: str
    created_time: int
    addresses: int


async def list_users(conn: AsyncConnection) -> list[UserSummary]:
    """Every user with the number of addresses they have now, oldest user first: the
    total every limit checks (``store/address_counts.py``, exact within a transaction)."""
    counted = select(users.c.email, users.c.created_time, total_of(users.c.id)).order_by(users.c.id)
    rows = (await conn.execute(counted)).all()
    return [UserSummary(str(row[0]), int(row[1]), int(row[2])) for row in rows]


async def export_user(conn: AsyncConnection, email: str) -> dict[str, Any]:
    """Everything kept about one user, as JSON-ready values: settings, mailboxes, their
    subdomain, addresses with their counters, contacts (the outside senders behind reverse
    aliases), and when each API key was made or revoked (never the key or its hash)."""
    user_id = await user_id_for_email(conn, email)
    user = (
        await conn.execute(
            select(
                users.c.email,
                users.c.created_time,
                users.c.show_name,
                users.c.use_relay_subdomain,
            ).where(users.c.id == user_id)
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
        "settings": {
            "show_name": bool(user.show_name),
            "use_relay_subdomain": bool(user.use_relay_subdomain),
        },
        "mailboxes": [m.json() for m in await mailboxes.list_mailboxes(conn, user_id)],
        "subdomain": next(
            (
                {"name": s.subdomain, "catch_all": s.catch_all, "created_time": s.created_time}
                for s in await relay_subdomains.list_subdomains(conn, user_id)
            ),
            None,
        ),
        "addresses": [
            {**asdict(address), "full_address": address.full_address} for address in owned
        ],
        "contacts": [
            {
                "address_id": row.address_id,
                "sender": row.sender,
                "reverse_alias": reverse.alias_address(row.alias, row.domain),
                "created_time": row.created_time,
            }
            for row in contacts
        ],
        "api_keys": [
            {"created_time": row.created_time, "revoked_time": row.revoked_time} for row in key_rows
        ],
    }


async def delete_user(conn: AsyncConnection, email: str) -> int:
    """Remove the user and every row that is theirs, in every table that leads to them
    through foreign keys (keys, sessions, mailboxes and their keys, subdomain, domains,
    addresses with their contacts, bounces, daily counts and marks); return how many
    addresses went. Every address (and the subdomain's name) keeps its tombstone, so none
    is handed out again."""
    user_id = await user_id_for_email(conn, email)
    owned = (
        await conn.execute(
            select(addresses.c.address, addresses.c.domain, addresses.c.subdomain).where(
                addresses.c.user_id == user_id
            )
        )
    ).all()
    await tombstones.keep(conn, (rules.tombstone(rules.full_address(*row)) for row in owned))
    if not await accounts.delete_user_rows(conn, user_id):
        raise UserNotFound(f"no such user: {email}")
    return len(owned)
