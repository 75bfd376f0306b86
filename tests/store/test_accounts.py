"""Users and keys in the store."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.errors import UserExists, UserNotFound
from maskmail.store import accounts

pytestmark = pytest.mark.anyio


async def test_mailboxes_differing_only_in_case_are_one_user(conn: AsyncConnection) -> None:
    user = await accounts.add_user(conn, "Dana.Lee@example.com")
    assert await accounts.user_id_for_email(conn, "dana.lee@EXAMPLE.com") == user
    assert await accounts.user_email(conn, user) == "Dana.Lee@example.com"
    with pytest.raises(UserExists):
        await accounts.add_user(conn, "dana.lee@example.com")


async def test_unknown_user(conn: AsyncConnection) -> None:
    with pytest.raises(UserNotFound):
        await accounts.user_id_for_email(conn, "nobody@example.com")


async def test_revoked_key_no_longer_names_an_owner(conn: AsyncConnection) -> None:
    user = await accounts.add_user(conn, "k@example.com")
    key_id = await accounts.add_key(conn, user, "a" * 64)
    owner = await accounts.owner_for_key(conn, "a" * 64)
    assert owner is not None and (owner.user_id, owner.key_id) == (user, key_id)
    assert await accounts.revoke_key(conn, "a" * 64)
    assert await accounts.owner_for_key(conn, "a" * 64) is None
    assert not await accounts.revoke_key(conn, "a" * 64)
