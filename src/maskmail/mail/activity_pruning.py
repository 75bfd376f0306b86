"""Forgetting the daily counts older than ``MASKMAIL_ACTIVITY_DAYS``, in the mail plane
that writes them, so that the table stops growing (docs/operations.md)."""

from __future__ import annotations

import asyncio
import logging

from maskmail.core.errors import StoreUnavailable
from maskmail.store import activity
from maskmail.store.driver import WRITE, DriverPool

log = logging.getLogger(__name__)

# Seconds before the first round and between two rounds; the tests shrink them. A day
# apart, because the delete reads the whole table (nothing indexes the day alone, and an
# index would cost every counted message a write).
FIRST = 60.0
EVERY = 24 * 3600.0


async def forget_old_activity(drivers: DriverPool, keep_days: int) -> None:
    """Until cancelled: delete the counts of the days before the last ``keep_days``.
    Each worker of ``smtp --workers`` runs it; the second to come finds nothing left."""
    await asyncio.sleep(FIRST)
    while True:
        try:
            await drivers.run(activity.forget_old(keep_days), WRITE)
        except StoreUnavailable:
            log.warning("could not forget the old daily counts; trying again tomorrow")
        await asyncio.sleep(EVERY)
