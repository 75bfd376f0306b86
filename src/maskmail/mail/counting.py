"""Counting what was done with a message, after it was done."""

from __future__ import annotations

import logging

from maskmail import metrics
from maskmail.core.errors import MaskmailError, StoreUnavailable
from maskmail.core.verdict import Action, Verdict
from maskmail.mail.context import MailContext
from maskmail.store import addresses, clock
from maskmail.store.driver import ONE_WRITE

log = logging.getLogger(__name__)
# The outcome each verdict's message is counted under in maskmail_mail_messages_total.
OUTCOMES = {
    Action.FORWARD: "forwarded",
    Action.BLOCK: "blocked",
    Action.SPAM: "spam",
    Action.REPLY: "replied",
    Action.DROP: "dropped",
    Action.REFUSE: "refused",
}


async def count(ctx: MailContext, address_id: int, verdict: Verdict, *, sent: bool) -> None:
    """Add the verdict's counters. Once a message was ``sent``, a counting failure must
    not make the client retry (the recipient would get it twice): when the database is
    unavailable the count is kept and written later (mail/pending_counts.py), still
    under the day the message was handled on."""
    metrics.mail_outcomes.labels(OUTCOMES[verdict.action]).inc()
    counters = verdict.counters
    if not counters:
        return
    day = clock.today()
    try:
        script = addresses.counted(ctx.drivers.dialect, address_id, counters, day)
        await ctx.drivers.run(script, ONE_WRITE)
    except StoreUnavailable:
        if not sent:
            raise
        ctx.pending_counts.add(address_id, counters, day)
    except MaskmailError:
        if not sent:
            raise
        log.error("delivered, but could not count it for address %d", address_id)
