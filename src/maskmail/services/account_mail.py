"""maskmail's own mail to an account's holder (a password reset link, a sign-in notice):
to the account's default verified mailbox, through the outbound path forwards take
(``Sender``: the mail plane's smarthost or outbox, DKIM-signed when a key is set), sent
after the page has answered.

Sending after the answer (``start_soon`` once the response is out, then a task of its
own) keeps the answer's time free of the database's and the smarthost's work for the
message, and so it tells nothing (the reset form answers alike for an account that does
not exist). At most ``MOST_PENDING`` messages wait at once per process; past that, new
ones are dropped and logged. A message still waiting when the process stops is lost;
the person asks again. Log lines name neither the mailbox nor the message's content.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.services.sending import Sender
from maskmail.store import mailboxes

log = logging.getLogger(__name__)

MOST_PENDING = 100
_pending: set[asyncio.Task[None]] = set()


async def default_mailbox(conn: AsyncConnection, user_id: int) -> str | None:
    """Where mail for the account goes: its default mailbox, once verified."""
    for mailbox in await mailboxes.list_mailboxes(conn, user_id):
        if mailbox.default and mailbox.verified:
            return mailbox.email
    return None


async def deliver(sender: Sender, message: bytes, recipient: str) -> None:
    """Hand one message of ours to the outbound path (null envelope sender: nobody
    answers a bounce of it)."""
    await sender.deliver(message, sender="", recipient=recipient)


async def _logged(work: Coroutine[Any, Any, None], what: str) -> None:
    try:
        await work
    except Exception as exc:  # nobody waits for this task to hear it
        # The class only: an SMTP error's text can carry the recipient.
        log.warning("%s: not sent (%s)", what, type(exc).__name__)


def start(work: Coroutine[Any, Any, None], what: str) -> bool:
    """Run ``work`` (preparing and sending one message) after the answer; False when
    too many are waiting already, and it is dropped."""
    if len(_pending) >= MOST_PENDING:
        work.close()
        log.warning("%s: not sent (%d messages wait already)", what, MOST_PENDING)
        return False
    task = asyncio.get_running_loop().create_task(_logged(work, what))
    _pending.add(task)
    task.add_done_callback(_pending.discard)
    return True


async def start_soon(make: Callable[[], Coroutine[Any, Any, None]], what: str) -> None:
    """``start(make(), what)``, for a door to run once its answer is out (a Starlette
    background task runs after the last byte of the response)."""
    start(make(), what)


async def settle(grace: float | None = None) -> None:
    """Wait until every message started so far is sent or given up (tests, and the app's
    shutdown, before the outbound path closes); past ``grace`` seconds the rest are
    cancelled, and logged as not sent."""
    waiting = len(_pending)
    try:
        async with asyncio.timeout(grace):
            while _pending:
                await asyncio.gather(*list(_pending), return_exceptions=True)
    except TimeoutError:
        # Cancelling the gather cancelled the tasks it waited for.
        log.warning("account mail: %d of %d messages not sent at shutdown", len(_pending), waiting)
