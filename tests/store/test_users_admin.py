"""Whole accounts: listing users, exporting one user's data, deleting a user for good."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import addresses as rules
from maskmail.core.errors import AddressTaken, InvalidAddress, UserNotFound
from maskmail.core.mailboxes import new_proof
from maskmail.store import accounts, address_counts, mailboxes, sessions, subdomains
from maskmail.store import addresses as store
from maskmail.store.driver import driver_of
from maskmail.store.reverse_aliases import found_or_made
from maskmail.store.tables import (
    address_mailboxes,
    addresses,
    api_keys,
    daily_activity,
    reverse_aliases,
    tombstones,
    web_sessions,
)
from maskmail.store.tables import mailboxes as mailbox_rows
from maskmail.store.tables import subdomains as subdomain_rows
from maskmail.store.users_admin import delete_user, export_user, list_users
from tests.core.test_addresses import pinned

pytestmark = pytest.mark.anyio
DOMAIN = "relay.test"


async def _account(conn: AsyncConnection, email: str, *locals_: str) -> int:
    user_id = await accounts.add_user(conn, email)
    await accounts.add_key(conn, user_id, "f" * 63 + email[0])
    for local in locals_:
        await store.create_address(conn, user_id, domain=DOMAIN, length=6, choose=pinned(local))
    return user_id


async def test_list_counts_each_users_addresses(conn: AsyncConnection) -> None:
    await _account(conn, "ann@example.com", "aaaaaa", "bbbbbb")
    await _account(conn, "bob@example.com")
    listed = {user.email: user.addresses for user in await list_users(conn)}
    assert listed["ann@example.com"] == 2 and listed["bob@example.com"] == 0


async def test_list_counts_as_the_limits_do_after_a_delete(conn: AsyncConnection) -> None:
    user_id = await _account(conn, "dee@example.com", "dddddd", "eeeeee")
    first, _ = await store.list_addresses(conn, user_id)
    await store.delete_address(conn, user_id, first.id)
    listed = {user.email: user.addresses for user in await list_users(conn)}
    assert listed["dee@example.com"] == 1 == await address_counts.total(conn, user_id)


async def test_export_holds_addresses_counters_contacts_settings_not_keys(
    conn: AsyncConnection,
) -> None:
    user_id = await _account(conn, "cat@example.com", "cccccc")
    await accounts.set_show_name(conn, "cat@example.com", True)
    await subdomains.claim(conn, user_id, "catsub", domain=DOMAIN)
    await mailboxes.add_mailbox(conn, user_id, "cat.work@example.org", new_proof(), limit=5)
    [address] = await store.list_addresses(conn, user_id)
    source = await driver_of(conn)
    made = await found_or_made(source, address.id, "shop@example.net", domain=DOMAIN)
    alias = made.full_address
    await store.count_mail(source, address.id, ["num_forwarded"])
    exported = await export_user(conn, "CAT@example.com")
    assert exported["email"] == "cat@example.com"
    assert exported["settings"] == {"show_name": True, "use_relay_subdomain": False}
    assert exported["subdomain"]["name"] == "catsub" and exported["subdomain"]["catch_all"]
    one, work = exported["mailboxes"]
    assert (one["email"], one["verified"], one["default"]) == ("cat@example.com", True, True)
    assert (work["email"], work["verified"], work["default"]) == (
        "cat.work@example.org",
        False,
        False,
    )
    [row] = exported["addresses"]
    assert row["full_address"] == f"cccccc@{DOMAIN}" and row["num_forwarded"] == 1
    assert exported["contacts"] == [
        {
            "address_id": address.id,
            "sender": "shop@example.net",
            "reverse_alias": alias,
            "created_time": exported["contacts"][0]["created_time"],
        }
    ]
    assert len(exported["api_keys"]) == 1
    assert "f" * 63 not in json.dumps(exported)  # the key's hash stays in the database
    with pytest.raises(UserNotFound):
        await export_user(conn, "nobody@example.com")


async def test_delete_removes_everything_and_keeps_every_address_out_of_reach(
    conn: AsyncConnection,
) -> None:
    user_id = await _account(conn, "dan@example.com", "dddddd", "eeeeee")
    await subdomains.claim(conn, user_id, "dansub", domain=DOMAIN)
    on_sub = await store.create_address(
        conn, user_id, domain=DOMAIN, length=6, place=store.Place.SUBDOMAIN, local="ffffff"
    )
    proof = new_proof()
    box = await mailboxes.add_mailbox(conn, user_id, "dan.b@example.org", proof, limit=5)
    await mailboxes.verify_by_token(conn, proof.token_hash)
    await mailboxes.set_address_mailboxes(conn, user_id, on_sub.id, [box.id])
    [first, second, _] = await store.list_addresses(conn, user_id)
    await found_or_made(conn, first.id, "x@example.net", domain=DOMAIN)
    await store.count_mail(await driver_of(conn), first.id, ["num_forwarded"])
    await sessions.start_session(conn, user_id, "d" * 64, lifetime=3600)
    # A tombstone lost (written before tombstones existed, say) is written again.
    lost = [
        rules.tombstone(rules.full_address("dddddd", DOMAIN)),
        rules.tombstone(rules.full_address("ffffff", DOMAIN, "dansub")),
    ]
    await conn.execute(tombstones.delete().where(tombstones.c.hash.in_(lost)))
    assert await delete_user(conn, "dan@example.com") == 3
    theirs = (first.id, second.id, on_sub.id)
    for table, where in (
        (addresses, addresses.c.user_id == user_id),
        (mailbox_rows, mailbox_rows.c.user_id == user_id),
        (subdomain_rows, subdomain_rows.c.user_id == user_id),
        (address_mailboxes, address_mailboxes.c.address_id.in_(theirs)),
        (api_keys, api_keys.c.user_id == user_id),
        (web_sessions, web_sessions.c.user_id == user_id),
        # Other tests' committed rows may be there: only this user's must be gone.
        (reverse_aliases, reverse_aliases.c.address_id.in_(theirs)),
        (daily_activity, daily_activity.c.address_id.in_(theirs)),
    ):
        assert await conn.scalar(select(func.count()).select_from(table).where(where)) == 0
    other = await _account(conn, "eve@example.com")
    for local in ("dddddd", "eeeeee"):
        with pytest.raises(AddressTaken):
            await store.create_address(
                conn, other, domain=DOMAIN, length=6, choose=pinned(*[local] * 200)
            )
    kept = select(func.count()).select_from(tombstones).where(tombstones.c.hash.in_(lost))
    assert await conn.scalar(kept) == 2
    # The subdomain's name stays taken, so its addresses can never be handed out again.
    with pytest.raises(InvalidAddress, match="taken or was used before"):
        await subdomains.claim(conn, other, "dansub", domain=DOMAIN)
    with pytest.raises(UserNotFound):
        await delete_user(conn, "dan@example.com")


async def test_delete_keeps_the_tombstone_of_an_address_on_a_subdomain(
    conn: AsyncConnection,
) -> None:
    user_id = await _account(conn, "fay@example.com")
    await subdomains.claim(conn, user_id, "faysub", domain=DOMAIN)
    await store.create_address(
        conn, user_id, domain=DOMAIN, length=6, place=store.Place.SUBDOMAIN, choose=pinned("ffffff")
    )
    on_subdomain = rules.tombstone(rules.full_address("ffffff", DOMAIN, "faysub"))
    on_domain = rules.tombstone(rules.full_address("ffffff", DOMAIN))
    await conn.execute(tombstones.delete().where(tombstones.c.hash == on_subdomain))
    assert await delete_user(conn, "fay@example.com") == 1
    written = set(
        (
            await conn.execute(
                select(tombstones.c.hash).where(tombstones.c.hash.in_([on_subdomain, on_domain]))
            )
        ).scalars()
    )
    # The address handed out is out of reach again; the same local part on the domain,
    # never handed out, is not.
    assert written == {on_subdomain}
