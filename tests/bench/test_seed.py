"""The benchmark's bulk load writes what the store would: addresses as new ones, keys that
work, and per-owner totals that match."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from bench.lab import database

from bench import seed
from maskmail.core.keys import hash_key
from maskmail.core.records import RelayAddress
from maskmail.store import accounts, address_counts, addresses
from maskmail.store.engine import create_engine, transaction
from maskmail.store.migrate import upgrade
from tests.support import BACKENDS


async def _loaded(url: str, keys: list[str]) -> list[tuple[int, int, list[RelayAddress]]]:
    engine = create_engine(url, pool_size=1)
    try:
        async with transaction(engine, readonly=True) as conn:
            found = []
            for key in keys:
                owner = await accounts.owner_for_key(conn, hash_key(key))
                assert owner is not None
                total = await address_counts.total(conn, owner.user_id)
                made = await addresses.list_addresses(conn, owner.user_id)
                found.append((owner.user_id, int(total or 0), made))
            return found
    finally:
        await engine.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
def test_the_bulk_load_writes_new_addresses_and_live_keys(tmp_path: Path, backend: str) -> None:
    with database(backend, tmp_path, "seed") as db:
        upgrade(db.url)
        keys = seed.load_maskmail(db, [2, 0, 3])
        found = asyncio.run(_loaded(db.url, keys))
    assert [(user, total, len(made)) for user, total, made in found] == [
        (1, 2, 2),
        (2, 0, 0),
        (3, 3, 3),
    ]
    first = found[0][2][0]
    assert (first.address, first.domain, first.subdomain) == ("u1n0", seed.DOMAIN, None)
    assert first.enabled and not first.block_spam and first.description == ""
    assert first.updated_time is None and first.created_time > 0
    assert (first.num_forwarded, first.num_blocked, first.num_replied, first.num_spam) == (
        0,
        0,
        0,
        0,
    )
