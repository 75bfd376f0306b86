"""The admin workflows on both backends: racing admins leave consistent rows, an admin
cannot lock themselves out, one user's limits hold; and ``maskmail user admin``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.config import Settings
from maskmail.core.errors import InvalidAddress, UserNotFound
from maskmail.services import admin, user_limits
from maskmail.store import accounts, audit_log
from maskmail.store.accounts import UserLimits
from maskmail.store.engine import transaction
from maskmail.store.migrate import upgrade
from maskmail.store.tables import metadata
from tests.support import run_cli

pytestmark = pytest.mark.anyio


@pytest.fixture
async def db(engine: AsyncEngine) -> AsyncIterator[AsyncEngine]:
    """The database emptied afterwards, the audit log with it: other tests share it and
    count its users and audit rows from the start."""
    yield engine
    async with transaction(engine) as conn:
        for table in reversed(metadata.sorted_tables):
            await conn.execute(delete(table))


async def _users(engine: AsyncEngine, *names: str) -> list[int]:
    async with transaction(engine) as conn:
        return [await accounts.add_user(conn, f"{n}-{id(engine)}@example.com") for n in names]


def _actor(user_id: int) -> admin.Actor:
    return admin.Actor(user_id, f"admin{user_id}@example.com", "192.0.2.1")


async def _actions(engine: AsyncEngine, target_id: int) -> list[str]:
    async with transaction(engine, readonly=True) as conn:
        entries = await audit_log.newest(conn, offset=0, limit=1000)
    return [e.action for e in entries if e.target_id == target_id]


async def test_two_admins_deleting_one_user_delete_it_once(db: AsyncEngine) -> None:
    one, two, target = await _users(db, "one", "two", "target")

    async def delete_as(actor: int) -> bool:
        try:
            async with transaction(db) as conn:
                await admin.delete_user(conn, _actor(actor), target)
        except UserNotFound:
            return False
        return True

    assert sorted(await asyncio.gather(delete_as(one), delete_as(two))) == [False, True]
    assert await _actions(db, target) == ["delete"]


async def test_a_disable_racing_a_delete_leaves_one_consistent_story(db: AsyncEngine) -> None:
    one, two, target = await _users(db, "dis", "del", "victim")

    async def act(work: str) -> bool:
        try:
            async with transaction(db) as conn:
                if work == "delete":
                    await admin.delete_user(conn, _actor(two), target)
                else:
                    await admin.set_disabled(conn, _actor(one), target, True)
        except UserNotFound:
            return False
        return True

    done = await asyncio.gather(act("disable"), act("delete"))
    actions = await _actions(db, target)
    # The delete always happens; the disable only if it ran first, and then it is logged first.
    assert done[1] and actions[0] == "delete"
    assert actions == (["delete", "disable"] if done[0] else ["delete"])


async def test_racing_limit_changes_keep_the_last_one_logged(db: AsyncEngine) -> None:
    one, target = await _users(db, "lim", "limited")

    async def set_to(n: int) -> None:
        async with transaction(db) as conn:
            await admin.set_limits(conn, _actor(one), target, UserLimits(addresses=n))

    await asyncio.gather(*(set_to(n) for n in range(1, 6)))
    async with transaction(db, readonly=True) as conn:
        kept = await accounts.limits_of(conn, target)
        newest = [
            e for e in await audit_log.newest(conn, offset=0, limit=1000) if e.target_id == target
        ]
    assert len(newest) == 5
    assert newest[0].detail == f"addresses {kept.addresses}, mailboxes default, domains default"


async def test_an_admin_cannot_disable_or_delete_themselves(db: AsyncEngine) -> None:
    [me] = await _users(db, "me")
    async with transaction(db) as conn:
        with pytest.raises(InvalidAddress, match="your own account"):
            await admin.set_disabled(conn, _actor(me), me, True)
        with pytest.raises(InvalidAddress, match="your own account"):
            await admin.delete_user(conn, _actor(me), me)
        # Enabling, or their own limits, they may.
        await admin.set_disabled(conn, _actor(me), me, False)
        await admin.set_limits(conn, _actor(me), me, UserLimits(domains=1))
    assert await _actions(db, me) == ["limits", "enable"]


async def test_own_mailbox_and_domain_limits_replace_the_settings(db: AsyncEngine) -> None:
    [user] = await _users(db, "limits")
    settings = Settings(max_mailboxes_per_user=4, max_domains_per_user=2)
    async with transaction(db) as conn:
        assert await user_limits.mailbox_limit(conn, user, settings) == 4
        assert await user_limits.domain_limit(conn, user, settings) == 2
        await accounts.set_limits(conn, user, UserLimits(mailboxes=1, domains=0))
        assert await user_limits.mailbox_limit(conn, user, settings) == 1
        assert await user_limits.domain_limit(conn, user, settings) == 0


async def test_set_admin_says_whether_it_changed_anything(db: AsyncEngine) -> None:
    [user] = await _users(db, "adm")
    async with transaction(db) as conn:
        email = await accounts.user_email(conn, user)
        assert await admin.set_admin(conn, email, True)
        assert not await admin.set_admin(conn, email.upper(), True)
        assert await accounts.is_admin(conn, user)
        assert await admin.set_admin(conn, email, False)
        with pytest.raises(UserNotFound):
            await admin.set_admin(conn, "nobody@example.com", True)
    assert await _actions(db, user) == ["revoke admin", "make admin"]


@pytest.mark.parametrize(
    ("text", "expected"), [("", None), (" 7 ", 7), ("0", 0), ("1000000", 1_000_000)]
)
def test_parse_limit_takes_blank_or_a_whole_number(text: str, expected: int | None) -> None:
    assert admin.parse_limit(text, "addresses", 0) == expected


@pytest.mark.parametrize("text", ["-1", "1.5", "1e3", "٣", "1000001", "abc", "0"])
def test_parse_limit_refuses_anything_else(text: str) -> None:
    with pytest.raises(InvalidAddress):
        admin.parse_limit(text, "mailboxes", 1)


@pytest.mark.slow
def test_the_command_makes_and_unmakes_an_admin(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'a.db'}"
    env = {"MASKMAIL_DATABASE_URL": url}
    upgrade(url)
    assert run_cli(env, "user", "add", "root@example.com").returncode == 0
    made = run_cli(env, "user", "admin", "root@example.com")
    again = run_cli(env, "user", "admin", "ROOT@example.com")
    taken = run_cli(env, "user", "admin", "root@example.com", "--revoke")
    missing = run_cli(env, "user", "admin", "nobody@example.com")
    assert made.returncode == 0 and "is an admin" in made.stderr and made.stdout == ""
    assert again.returncode == 0 and "was an admin already" in again.stderr
    assert taken.returncode == 0 and "no longer an admin" in taken.stderr
    assert missing.returncode != 0 and "no such user" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
