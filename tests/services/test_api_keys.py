"""The key name rule and the revoke every door calls."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.errors import InvalidAddress, KeyNotFound
from maskmail.services import api_keys
from maskmail.store import accounts

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("typed", "kept"),
    [(" laptop ", "laptop"), ("", None), ("  \t ", None), (None, None), ("é" * 64, "é" * 64)],
)
def test_a_name_is_trimmed_and_blank_is_none(typed: str | None, kept: str | None) -> None:
    assert api_keys.key_name(typed) == kept


@pytest.mark.parametrize("typed", ["x" * 65, "a\rb", "a\x7fb", "a\x85b", "a\x00b", "\ud800"])
def test_a_name_that_breaks_a_rule_is_refused_naming_the_field(typed: str) -> None:
    with pytest.raises(InvalidAddress) as refused:
        api_keys.key_name(typed)
    assert refused.value.details == {"field": "name"}


async def test_only_the_owner_revokes_and_only_once(conn: AsyncConnection) -> None:
    ann = await accounts.add_user(conn, "keys.ann@example.com")
    bob = await accounts.add_user(conn, "keys.bob@example.com")
    await api_keys.create(conn, ann, "mine")
    [made] = await api_keys.listed(conn, ann)
    assert made.name == "mine"
    with pytest.raises(KeyNotFound):
        await api_keys.revoke(conn, bob, made.id)
    assert await api_keys.listed(conn, ann) == [made]
    await api_keys.revoke(conn, ann, made.id)
    assert await api_keys.listed(conn, ann) == []
    with pytest.raises(KeyNotFound):
        await api_keys.revoke(conn, ann, made.id)
