"""The password change every door calls: checked, hashed, stored, sessions ended."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from argon2 import PasswordHasher
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core import passwords
from maskmail.services.accounts import set_password
from maskmail.store import accounts, sessions

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def cheap_argon2(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """argon2id at its lowest cost: the cost is not what these tests look at."""
    monkeypatch.setattr(
        passwords, "_hasher", PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
    )
    yield


async def _user_with_sessions(conn: AsyncConnection, email: str) -> int:
    user_id = await accounts.add_user(conn, email)
    for token_hash in ("a" * 64, "b" * 64):
        await sessions.start_session(conn, user_id, token_hash, lifetime=3600)
    return user_id


async def test_the_new_password_is_stored_hashed_and_other_sessions_end(
    conn: AsyncConnection,
) -> None:
    user_id = await _user_with_sessions(conn, "pia@example.com")
    await set_password(conn, user_id, "a long new password", keep="a" * 64)
    stored = (await sessions.account_for_user(conn, user_id)).password_hash
    assert stored is not None and stored.startswith("$argon2id$")
    assert passwords.verify(stored, "a long new password")
    assert await sessions.session_user(conn, "a" * 64) == (user_id, "pia@example.com", False)
    assert await sessions.session_user(conn, "b" * 64) is None


async def test_without_a_session_to_keep_every_session_ends(conn: AsyncConnection) -> None:
    user_id = await _user_with_sessions(conn, "quinn@example.com")
    await set_password(conn, user_id, "a long new password")
    assert [await sessions.session_user(conn, t * 64) for t in "ab"] == [None, None]


@pytest.mark.parametrize("weak", ["short", "two\nlines of text", "x" * 1025])
async def test_a_weak_password_changes_nothing(conn: AsyncConnection, weak: str) -> None:
    user_id = await _user_with_sessions(conn, "ria@example.com")
    with pytest.raises(passwords.WeakPassword):
        await set_password(conn, user_id, weak)
    assert (await sessions.account_for_user(conn, user_id)).password_hash is None
    assert await sessions.session_user(conn, "b" * 64) == (user_id, "ria@example.com", False)
