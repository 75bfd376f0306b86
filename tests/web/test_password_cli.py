"""``maskmail user password EMAIL``: one line from a pipe, checked, hashed with argon2id."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from maskmail.core import passwords
from maskmail.store import sessions
from maskmail.store.engine import create_engine, transaction
from maskmail.store.migrate import upgrade
from tests.support import run_cli

# Four runs of the real `maskmail` command.
pytestmark = pytest.mark.slow


def _stored(url: str, email: str) -> str | None:
    async def read() -> str | None:
        engine = create_engine(url, pool_size=1)
        try:
            async with transaction(engine) as conn:
                account = await sessions.account_for_email(conn, email)
                return account.password_hash if account else None
        finally:
            await engine.dispose()

    return asyncio.run(read())


def _set(env: dict[str, str], email: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return run_cli(env, "user", "password", email, stdin=stdin)


def test_password_from_stdin(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'p.db'}"
    env = {"MASKMAIL_DATABASE_URL": url}
    upgrade(url)
    assert run_cli(env, "user", "add", "pia@example.com").returncode == 0
    short = _set(env, "pia@example.com", "short\n")
    missing = _set(env, "nobody@example.com", "long enough password\n")
    assert short.returncode != 0 and "at least" in short.stderr
    assert missing.returncode != 0 and "no such user" in missing.stderr
    assert _stored(url, "pia@example.com") is None
    done = _set(env, "pia@example.com", "long enough password\nignored second line\n")
    assert done.returncode == 0, done.stderr
    stored = _stored(url, "pia@example.com")
    assert stored is not None and stored.startswith("$argon2id$")
    assert passwords.verify(stored, "long enough password")
    assert not passwords.verify(stored, "ignored second line")
