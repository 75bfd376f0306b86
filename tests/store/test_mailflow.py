"""The mail plane's store scripts, run on driver connections from the pool as the mail
plane runs them: the recipient with its owner and mailboxes in one statement, the address
read again with the sender's reverse alias (made in one statement on PostgreSQL, which
must still agree under concurrency), and the counters."""

from __future__ import annotations

import asyncio
import secrets

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.core.reverse import alias_address
from maskmail.store import accounts, mailflow
from maskmail.store.addresses import (
    count_mail,
    counted,
    create_address,
    delete_address,
    get_address,
    update_address,
)
from maskmail.store.clock import today
from maskmail.store.driver import ONE_WRITE, DriverPool
from maskmail.store.engine import transaction
from maskmail.store.reverse_aliases import MAX_ROUNDS, found_or_made
from maskmail.store.tables import reverse_aliases
from maskmail.store.users_admin import export_user

pytestmark = pytest.mark.anyio
DOMAIN = "relay.test"


async def new_address(engine: AsyncEngine) -> tuple[int, int, str, str]:
    owner = f"Owner.{secrets.token_hex(4)}@Example.com"
    async with transaction(engine) as conn:
        user_id = await accounts.add_user(conn, owner)
        address = await create_address(conn, user_id, domain=DOMAIN, length=8)
    return user_id, address.id, address.address, owner


async def test_recipient_comes_with_its_owner_and_mailboxes_in_any_case(
    engine: AsyncEngine,
) -> None:
    user_id, address_id, local, owner = await new_address(engine)
    pool = DriverPool(engine)
    found = await pool.run(mailflow.find_recipient(local.upper(), DOMAIN.upper()))
    missing = await pool.run(mailflow.find_recipient(local + "x", DOMAIN))
    assert found is not None and missing is None
    assert (found.address.id, found.address.user_id, found.owner_mailbox) == (
        address_id,
        user_id,
        owner,
    )
    assert found.address.enabled is True and found.address.block_spam is False
    [box] = found.destinations
    assert (box.email, box.verified, box.default, box.chosen, box.key) == (
        owner,
        True,
        True,
        False,
        None,
    )


async def test_a_disabled_address_is_found_disabled(engine: AsyncEngine) -> None:
    user_id, address_id, local, _ = await new_address(engine)
    async with transaction(engine) as conn:
        await update_address(conn, user_id, address_id, {"enabled": False})
    found = await DriverPool(engine).run(mailflow.find_recipient(local, DOMAIN))
    assert found is not None and found.address.enabled is False


async def _recheck(pool: DriverPool, address_id: int, sender: str | None) -> mailflow.Checked:
    """As the mail plane runs it: again while an alias that is wanted was not made."""
    for _ in range(MAX_ROUNDS):
        script = mailflow.recheck(pool.dialect, address_id, sender, domain=DOMAIN)
        checked = await pool.run(script, ONE_WRITE)
        address = checked.address
        if sender is None or checked.reverse_alias or address is None or not address.enabled:
            return checked
    raise AssertionError("no reverse alias made")


async def _aliases_of(engine: AsyncEngine, address_id: int) -> int:
    async with transaction(engine, readonly=True) as conn:
        query = select(func.count()).where(reverse_aliases.c.address_id == address_id)
        return int(await conn.scalar(query) or 0)


async def test_recheck_reads_the_address_and_makes_the_senders_alias_once(
    engine: AsyncEngine,
) -> None:
    _, address_id, _, _ = await new_address(engine)
    pool = DriverPool(engine)
    plain = await _recheck(pool, address_id, None)
    assert plain.address is not None and plain.address.id == address_id
    assert plain.reverse_alias is None
    made = (await _recheck(pool, address_id, "Alice@Example.com")).reverse_alias
    assert made is not None and made.startswith("r.") and made.endswith(f"@{DOMAIN}")
    assert (await _recheck(pool, address_id, " alice@example.COM")).reverse_alias == made
    other = (await _recheck(pool, address_id, "bob@example.com")).reverse_alias
    assert other is not None and other != made
    assert await _aliases_of(engine, address_id) == 2


async def test_recheck_makes_no_alias_for_a_disabled_or_deleted_address(
    engine: AsyncEngine,
) -> None:
    user_id, address_id, _, _ = await new_address(engine)
    pool = DriverPool(engine)
    async with transaction(engine) as conn:
        await update_address(conn, user_id, address_id, {"enabled": False})
    off = await _recheck(pool, address_id, "carol@example.com")
    assert off.address is not None and off.address.enabled is False
    assert off.reverse_alias is None and await _aliases_of(engine, address_id) == 0
    async with transaction(engine) as conn:
        await delete_address(conn, user_id, address_id)
    assert await _recheck(pool, address_id, "carol@example.com") == mailflow.Checked(None)


async def test_counters_move_together_and_only_the_named_ones(engine: AsyncEngine) -> None:
    user_id, address_id, _, _ = await new_address(engine)
    pool = DriverPool(engine)
    for named in (("num_spam", "num_forwarded"), ("num_forwarded",)):
        await pool.run(counted(pool.dialect, address_id, named, today()), ONE_WRITE)
    async with pool() as driver:
        await count_mail(driver, address_id, ("num_blocked",))
        await count_mail(driver, address_id, ())
    async with transaction(engine, readonly=True) as conn:
        address = await get_address(conn, user_id, address_id)
    counters = (address.num_forwarded, address.num_spam, address.num_blocked, address.num_replied)
    assert counters == (2, 1, 1, 0)


async def test_concurrent_first_messages_from_one_sender_agree_on_one_alias(
    engine: AsyncEngine,
) -> None:
    _, address_id, _, _ = await new_address(engine)
    pool = DriverPool(engine)

    async def first_use(sender: str) -> str | None:
        return (await _recheck(pool, address_id, sender)).reverse_alias

    made = await asyncio.gather(*(first_use("X@example.com") for _ in range(6)))
    assert len(set(made)) == 1 and str(made[0]).endswith(f"@{DOMAIN}")
    assert await first_use("y@example.com") != made[0]


async def test_every_store_module_writes_the_reverse_alias_as_core_does(
    engine: AsyncEngine,
) -> None:
    _, address_id, _, owner = await new_address(engine)
    pool = DriverPool(engine)
    by_mail = (await _recheck(pool, address_id, "shop@example.net")).reverse_alias
    async with transaction(engine) as conn:
        made = await found_or_made(conn, address_id, "shop@example.net", domain=DOMAIN)
        [contact] = (await export_user(conn, owner))["contacts"]
    wanted = alias_address(made.alias, made.domain)
    assert wanted.startswith("r.") and wanted.endswith(f"@{DOMAIN}")
    assert (made.full_address, by_mail, contact["reverse_alias"]) == (wanted, wanted, wanted)
