"""An account deleted by its owner: the export offered first, what confirming takes,
and the deletion itself, which is the operator's (``maskmail user delete``): one rule."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store import accounts, two_factor, users_admin


async def needs_second_factor(conn: AsyncConnection, user_id: int) -> bool:
    """Whether confirming the deletion takes a second factor besides the password: it
    does while the user has two-factor sign-in on (services/two_factor.confirm_owner
    checks the code)."""
    return await two_factor.is_on(conn, user_id)


async def export_account(conn: AsyncConnection, user_id: int) -> dict[str, Any]:
    """Everything kept about the account, as ``maskmail user export`` writes it."""
    return await users_admin.export_user(conn, await accounts.user_email(conn, user_id))


async def delete_account(conn: AsyncConnection, user_id: int) -> int:
    """Delete the account as ``maskmail user delete`` does (every address kept as a
    tombstone, every session ended with the rest); the number of addresses deleted."""
    return await users_admin.delete_user(conn, await accounts.user_email(conn, user_id))
