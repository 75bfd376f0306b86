"""The daily counts the mail plane keeps per address: the statement that adds to them
(``addresses.count_mail`` runs it with the address's own counters), reading them, and
forgetting the days older than ``MASKMAIL_ACTIVITY_DAYS``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Integer, Select, bindparam, func, literal_column, select
from sqlalchemy.dialects.postgresql import insert as upsert
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.core.verdict import Counter
from maskmail.store.clock import today
from maskmail.store.statements import Script, Statement
from maskmail.store.tables import addresses, daily_activity

_FORGET_BEFORE = Statement.portable("DELETE FROM daily_activity WHERE day < ?")


def add_to_day(counters: tuple[Counter, ...], ids: Select[Any]) -> Any:
    """Adding one to each counter of the day (parameter ``day``) for the address ``ids``
    selects."""
    one = literal_column("1", Integer)
    adding = upsert(daily_activity).from_select(
        ["address_id", "day", *counters],
        ids.add_columns(bindparam("day", type_=Integer), *(one for _ in counters)),
    )
    return adding.on_conflict_do_update(
        index_elements=[daily_activity.c.address_id, daily_activity.c.day],
        set_={name: daily_activity.c[name] + adding.excluded[name] for name in counters},
    )


@dataclass(frozen=True, slots=True)
class Day:
    """What happened to mail on one UTC day (days since the epoch)."""

    day: int
    forwarded: int = 0
    blocked: int = 0
    spam: int = 0
    replied: int = 0


async def last_days(
    conn: AsyncConnection, user_id: int, *, days: int = 30, address_id: int | None = None
) -> list[Day]:
    """The last ``days`` days up to today, oldest first, one entry per day (zeros
    included), for all of the owner's addresses or for one of them."""
    first = today() - days + 1
    d = daily_activity.c
    query = (
        select(
            d.day,
            func.sum(d.num_forwarded),
            func.sum(d.num_blocked),
            func.sum(d.num_spam),
            func.sum(d.num_replied),
        )
        .select_from(daily_activity.join(addresses, addresses.c.id == d.address_id))
        .where(addresses.c.user_id == user_id, d.day >= first)
        .group_by(d.day)
    )
    if address_id is not None:
        query = query.where(d.address_id == address_id)
    found = {int(r[0]): Day(*(int(v or 0) for v in r)) for r in await conn.execute(query)}
    return [found.get(day, Day(day)) for day in range(first, first + days)]


def first_kept(keep_days: int) -> int:
    """The oldest day whose counts are kept, of the last ``keep_days`` (today included)."""
    return today() - keep_days + 1


def forget_old(keep_days: int) -> Script[None]:
    """Delete every address's counts of the days before the last ``keep_days``; run it
    WRITE. Nothing reads them: the dashboard shows 30 days."""
    yield _FORGET_BEFORE, (first_kept(keep_days),)
