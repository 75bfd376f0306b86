"""Forwards to a mailbox with an OpenPGP key leave encrypted (PGP/MIME), or not at all.

Every copy is made before any is sent: when one cannot be encrypted the whole message
is deferred (451) and nothing goes out in plain text; the owner hears of it once, at
their default mailbox (``store.mailbox_keys.claim_failure_notice`` keeps retries quiet).
An encryption that outlasts ``MASKMAIL_PGP_TIMEOUT`` defers the message too, without a
notice (the key is not at fault), and the session goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from functools import partial

from maskmail.core.errors import DeliveryDeferred, DeliveryRefused
from maskmail.core.mailboxes import Destination, encryption_notice
from maskmail.core.pgp import DeliveryKey
from maskmail.mail.context import MailContext
from maskmail.mail.pgp_mime import already_encrypted, encrypt_forward
from maskmail.mail.rewrite import Fields
from maskmail.openpgp import EncryptionFailed, encrypt
from maskmail.store import mailbox_keys
from maskmail.store.engine import transaction

log = logging.getLogger(__name__)


def _encrypt(message: bytes, key: DeliveryKey) -> bytes:
    """In a thread, so that the timeout can give up on it."""
    to_key = partial(encrypt, armored=key.armored, fingerprint=key.fingerprint)
    return encrypt_forward(message, to_key, protect_subject=key.encrypt_subject)


async def copies(
    ctx: MailContext,
    message: bytes,
    fields: Fields,
    body: bytes,
    boxes: Sequence[Destination],
    targets: Sequence[str],
) -> dict[str, bytes]:
    """The message each target gets: encrypted to its mailbox's key when it has one
    (each key and subject choice encrypted once), as it is otherwise."""
    by_email = {box.email: box for box in boxes}
    keyed = any(box.key is not None for t in targets if (box := by_email.get(t)) is not None)
    if not keyed or already_encrypted(fields, body):
        return dict.fromkeys(targets, message)
    made: dict[tuple[str, bool], bytes] = {}
    out = {}
    for target in targets:
        box = by_email.get(target)
        key = box.key if box is not None else None
        if box is None or key is None:
            out[target] = message
            continue
        plan = (key.fingerprint, key.encrypt_subject)
        if plan not in made:
            made[plan] = await _encrypted(ctx, message, box, key, boxes)
        out[target] = made[plan]
    return out


async def _encrypted(
    ctx: MailContext,
    message: bytes,
    box: Destination,
    key: DeliveryKey,
    boxes: Sequence[Destination],
) -> bytes:
    try:
        work = asyncio.to_thread(_encrypt, message, key)
        encrypted = await asyncio.wait_for(work, ctx.pgp_timeout)
    except TimeoutError:
        log.warning("encrypting to the key of mailbox %d timed out", box.id)
        # Not chained: a TimeoutError behind an error reads as a database outage.
        raise DeliveryDeferred("the forward could not be encrypted in time; try again") from None
    except EncryptionFailed as exc:
        log.warning("cannot encrypt to the key of mailbox %d: %s", box.id, exc.reason)
        if not key.failed:
            await _tell_owner(ctx, box, key, boxes, exc.reason)
        raise DeliveryDeferred("the forward could not be encrypted; try again later") from exc
    if key.failed:
        async with transaction(ctx.engine) as conn:
            await mailbox_keys.clear_failure(conn, box.id, key.fingerprint)
    return encrypted


async def _tell_owner(
    ctx: MailContext,
    box: Destination,
    key: DeliveryKey,
    boxes: Sequence[Destination],
    reason: str,
) -> None:
    """The notice, through the outbound path with the null sender (nothing comes back
    to the relay), and only by the first to claim it; a notice not sent leaves the
    claim to the next retry."""
    default = next((b.email for b in boxes if b.default), None)
    if default is None:
        return
    when = int(ctx.clock().timestamp())
    notice = encryption_notice(
        to=default, sender=f"mailboxes@{ctx.domain}", mailbox_id=box.id, reason=reason, when=when
    )
    try:
        async with transaction(ctx.engine) as conn:
            if await mailbox_keys.claim_failure_notice(conn, box.id, key.fingerprint, when):
                await ctx.outbound.deliver(notice, sender="", recipient=default)
    except (DeliveryDeferred, DeliveryRefused) as exc:
        log.warning("encryption notice for mailbox %d not delivered: %s", box.id, exc.message)
