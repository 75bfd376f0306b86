"""``maskmail user password EMAIL``: one line from a pipe or asked twice on a terminal,
checked, hashed with argon2id."""

from __future__ import annotations

import asyncio
import os
import pty
import select
import subprocess
from pathlib import Path

import pytest

from maskmail.core import passwords
from maskmail.store import sessions
from maskmail.store.engine import create_engine, transaction
from maskmail.store.migrate import upgrade
from tests.support import maskmail_cmd, run_cli

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


def _on_a_terminal(env: dict[str, str], email: str, answers: list[str]) -> tuple[int, str]:
    """Run the command with a pseudo-terminal for its input and output, typing one answer
    after each prompt; returns its exit status and what it printed."""
    main, child = pty.openpty()
    proc = subprocess.Popen(
        maskmail_cmd("user", "password", email),
        stdin=child,
        stdout=child,
        stderr=child,
        env={**os.environ, **env},
        start_new_session=True,  # no controlling terminal: getpass reads the pty's input
    )
    os.close(child)
    seen = b""
    try:
        for answer in answers:
            while not seen.rstrip().endswith(b":"):
                ready, _, _ = select.select([main], [], [], 30)
                assert ready, f"no prompt, only {seen!r}"
                seen += os.read(main, 1024)
            os.write(main, answer.encode() + b"\n")
            seen += b"|"
        status = proc.wait(timeout=60)
        while select.select([main], [], [], 0.2)[0]:
            try:
                chunk = os.read(main, 1024)
            except OSError:  # the child closed its side
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(main)
        if proc.poll() is None:
            proc.kill()
    return status, seen.decode(errors="replace")


def test_password_on_a_terminal_is_asked_twice(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 't.db'}"
    env = {"MASKMAIL_DATABASE_URL": url}
    upgrade(url)
    assert run_cli(env, "user", "add", "rae@example.com").returncode == 0
    status, shown = _on_a_terminal(env, "rae@example.com", ["a long password", "another one"])
    assert status != 0 and "differ" in shown
    assert "a long password" not in shown  # not echoed
    assert _stored(url, "rae@example.com") is None
    status, shown = _on_a_terminal(env, "rae@example.com", ["a long password"] * 2)
    assert status == 0, shown
    assert "New password:" in shown and "Again:" in shown
    stored = _stored(url, "rae@example.com")
    assert stored is not None and passwords.verify(stored, "a long password")
