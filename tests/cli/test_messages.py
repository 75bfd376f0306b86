"""Every command says what it did in one line on stderr; stdout keeps only what a script reads."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from maskmail.core.keys import PREFIX
from maskmail.store import accounts
from maskmail.store.addresses import create_address
from maskmail.store.engine import create_engine, transaction
from maskmail.store.migrate import head_revision
from tests.support import run_cli

# Each step starts a fresh interpreter.
pytestmark = pytest.mark.slow


def said(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a successful command wrote on stderr."""
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


async def _give_address(url: str, mailbox: str) -> None:
    engine = create_engine(url, pool_size=1)
    try:
        async with transaction(engine) as conn:
            user_id = await accounts.user_id_for_email(conn, mailbox)
            await create_address(conn, user_id, domain="relay.test", length=8)
    finally:
        await engine.dispose()


def test_each_command_says_what_it_did(tmp_path: Path) -> None:
    data = tmp_path / "var"
    env = {"MASKMAIL_DATA_DIR": str(data)}

    upgraded = run_cli(env, "db", "upgrade")
    assert "latest schema" in said(upgraded) and upgraded.stdout == ""

    added = run_cli(env, "user", "add", "ann@Example.COM")
    assert said(added) == "added the user ann@example.com" and added.stdout == ""

    created = run_cli(env, "key", "create", "ann@example.com")
    assert "created an API key" in said(created)
    # A script reads the key alone from stdout: KEY=$(maskmail key create ...).
    key = created.stdout.removesuffix("\n")
    assert key.startswith(PREFIX) and "\n" not in key

    revoked = run_cli(env, "key", "revoke", key)
    assert said(revoked).startswith("revoked the key") and revoked.stdout == ""
    assert key not in revoked.stderr

    shown = run_cli(env, "user", "show-name", "ann@example.com", "true")
    assert "with the display name" in said(shown)
    password = run_cli(env, "user", "password", "ann@example.com", stdin="a long passphrase\n")
    assert "set the password" in said(password)

    backup = tmp_path / "copy.db"
    backed_up = run_cli(env, "backup", str(backup))
    assert said(backed_up) == f"backed up {data / 'maskmail.db'} to {backup}"
    restored = run_cli(env, "restore", str(backup))
    assert said(restored) == f"restored {data / 'maskmail.db'} from {backup}"

    checked = run_cli(env, "domains", "check")
    assert said(checked) == "checked 0 custom domains" and checked.stdout == ""

    asyncio.run(_give_address(f"sqlite+aiosqlite:///{data / 'maskmail.db'}", "ann@example.com"))
    deleted = run_cli(env, "user", "delete", "ann@example.com")
    assert said(deleted) == "deleted the user and 1 address (kept as tombstones)"


def test_a_command_on_a_database_that_needs_upgrading_says_so(tmp_path: Path) -> None:
    env = {"MASKMAIL_DATA_DIR": str(tmp_path)}
    for args in (("user", "list"), ("key", "revoke", "mm_none")):
        failed = run_cli(env, *args)
        assert failed.returncode == 1
        assert failed.stderr.splitlines() == [
            "maskmail: the database's schema is at no revision, this maskmail's at "
            f"{head_revision()}; run maskmail db upgrade"
        ]
    assert said(run_cli(env, "db", "upgrade"))
    assert run_cli(env, "user", "list").returncode == 0


def test_a_refused_command_says_why_in_one_line(tmp_path: Path) -> None:
    env = {"MASKMAIL_DATA_DIR": str(tmp_path)}
    run_cli(env, "db", "upgrade")
    refused = run_cli(env, "key", "revoke", "mm_none")
    assert (refused.returncode, refused.stderr) == (1, "maskmail: no live key matches that value\n")
