"""The owner's row is locked by one function, and their number of addresses is counted by
one: read from the store's source, and the lock and the count at work."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

import maskmail.store
from maskmail.store import accounts, address_counts
from maskmail.store import addresses as address_store
from maskmail.store.address_search import search_addresses
from maskmail.store.owner_lock import lock_owner

STORE = Path(maskmail.store.__file__).parent
pytestmark = pytest.mark.anyio


def _sources() -> dict[str, str]:
    return {path.stem: path.read_text() for path in sorted(STORE.glob("*.py"))}


def _locked(source: str) -> list[str]:
    """What each ``.with_for_update()`` of the module locks, as source text, with the
    module's names for statements written out."""
    tree = ast.parse(source)
    assigned = {
        target.id: ast.unparse(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    locked = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(".with_for_update"):
            text = ast.unparse(node)
            for _ in range(3):
                text = re.sub(r"\b_?[A-Z_]+\b", lambda m: assigned.get(m[0], m[0]), text)
            locked.append(text)
    return locked


def test_only_owner_lock_locks_the_owner_row() -> None:
    locking = {
        name
        for name, text in _sources().items()
        if any(re.search(r"\busers\b", lock) for lock in _locked(text))
    }
    assert locking == {"owner_lock"}


def test_only_address_counts_sums_the_counts() -> None:
    summing = {
        name
        for name, text in _sources().items()
        if name != "tables" and re.search(r"sum\(\s*(?:address_counts\.c\.n|c\.n)", text)
    }
    counting_rows = {
        name
        for name, text in _sources().items()
        if re.search(
            r"func\.count\(\)\)\s*\.select_from\(addresses\)\s*\.where\(\s*addresses"
            r"\.c\.user_id == bindparam",
            text,
        )
    }
    assert (summing, counting_rows) == ({"address_counts"}, set())


async def test_the_lock_finds_the_owner_and_the_count_follows_writes(
    conn: AsyncConnection,
) -> None:
    user = await accounts.add_user(conn, "rules@example.com")
    assert await lock_owner(conn, user) is True
    assert await lock_owner(conn, user + 1000) is False
    made = [await address_store.create_address(conn, user, domain="relay.test", length=8)]
    made.append(await address_store.create_address(conn, user, domain="relay.test", length=8))
    assert await address_counts.total(conn, user) == 2
    await address_store.delete_address(conn, user, made[0].id)
    assert await address_counts.total(conn, user) == 1
    assert (await search_addresses(conn, user, "", offset=0, limit=5))[0] == 1
