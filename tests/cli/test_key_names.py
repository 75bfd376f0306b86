"""``maskmail key create EMAIL --name NAME``: the key alone on stdout, made under the
checked name that the dashboard and ``GET /v3/relay/keys`` show; a bad name makes none."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from sqlalchemy import delete

from maskmail.cli import main
from maskmail.core.keys import PREFIX
from maskmail.store import accounts
from maskmail.store.accounts import KeyInfo
from maskmail.store.engine import create_engine, transaction
from maskmail.store.tables import metadata


def _keys(url: str, email: str) -> list[KeyInfo]:
    async def read() -> list[KeyInfo]:
        engine = create_engine(url, pool_size=1)
        try:
            async with transaction(engine, readonly=True) as conn:
                user_id = await accounts.user_id_for_email(conn, email)
                return await accounts.live_keys(conn, user_id)
        finally:
            await engine.dispose()

    return asyncio.run(read())


def _run(*args: str) -> int:
    with pytest.raises(SystemExit) as ended:
        main(list(args))
    return int(ended.value.code or 0)


async def _wipe(url: str) -> None:
    engine = create_engine(url, pool_size=1)
    try:
        async with transaction(engine) as conn:
            for table in reversed(metadata.sorted_tables):
                await conn.execute(delete(table))
    finally:
        await engine.dispose()


@pytest.fixture
def env(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The session's test database, emptied afterwards: the other tests share it."""
    monkeypatch.setenv("MASKMAIL_DATABASE_URL", database_url)
    monkeypatch.setenv("MASKMAIL_DOMAIN", "relay.test")
    yield database_url
    asyncio.run(_wipe(database_url))


def test_a_key_is_made_under_its_name(env: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("user", "add", "kim@example.com") == 0
    capsys.readouterr()
    assert _run("key", "create", "kim@example.com", "--name", "  backup script ") == 0
    key = capsys.readouterr().out.removesuffix("\n")
    assert key.startswith(PREFIX) and "\n" not in key
    assert [(k.name, k.prefix) for k in _keys(env, "kim@example.com")] == [
        ("backup script", key[: accounts.PREFIX_LENGTH])
    ]
    assert _run("key", "create", "kim@example.com") == 0
    assert [k.name for k in _keys(env, "kim@example.com")] == [None, "backup script"]


@pytest.mark.parametrize(
    ("name", "reason"),
    [("x" * 65, "at most 64 characters"), ("a\nb", "control characters")],
)
def test_a_bad_name_makes_no_key(
    env: str, capsys: pytest.CaptureFixture[str], name: str, reason: str
) -> None:
    email = f"lee{len(name)}@example.com"
    assert _run("user", "add", email) == 0
    capsys.readouterr()
    assert _run("key", "create", email, "--name", name) == 1
    said = capsys.readouterr()
    assert said.out == "" and reason in said.err
    assert _keys(env, email) == []
