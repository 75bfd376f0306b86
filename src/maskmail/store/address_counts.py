"""Each user's number of addresses: the sum of their slots in ``address_counts``, which
triggers on ``addresses`` keep (migration 0011 says why there are slots)."""

from __future__ import annotations

from sqlalchemy import func, literal_column, select
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from maskmail.store.tables import address_counts


def total_of(user_id: int | ColumnElement[int]) -> ColumnElement[int]:
    """The total, as a scalar subquery (its 0 written in, so that its only parameter, if
    any, is the user's id)."""
    return (
        select(func.coalesce(func.sum(address_counts.c.n), literal_column("0")))
        .where(address_counts.c.user_id == user_id)
        .scalar_subquery()
    )


def total_sql(owner: str) -> str:
    """The same subquery as SQL text, for the statements written as text
    (store/listing.py, store/first_mail.py); ``owner`` is an SQL expression for the
    user's id."""
    subquery = total_of(literal_column(owner))
    return str(subquery.compile(compile_kwargs={"literal_binds": True}))


async def total(conn: AsyncConnection, user_id: int) -> int:
    return int(await conn.scalar(select(total_of(user_id))) or 0)
