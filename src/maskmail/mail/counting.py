"""Counting what was done with a message, after it was done."""

from __future__ import annotations

import logging

from maskmail.core.errors import MaskmailError
from maskmail.core.verdict import Verdict
from maskmail.mail.context import MailContext
from maskmail.store import mailflow

log = logging.getLogger(__name__)


async def count(ctx: MailContext, address_id: int, verdict: Verdict, *, sent: bool) -> None:
    """Add the verdict's counters. Once a message was ``sent``, a counting failure must
    not make the client retry (the recipient would get it twice), so it is logged."""
    if not verdict.counters:
        return
    try:
        async with ctx.raw() as raw:
            await mailflow.count(raw, address_id, verdict.counters)
    except MaskmailError:
        if not sent:
            raise
        log.error("delivered, but could not count it for address %d", address_id)
