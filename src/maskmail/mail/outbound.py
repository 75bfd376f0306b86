"""Sending a forward on: to the smarthost with aiosmtplib, or into the local Maildir.

Either way the outcome is one of three: delivered (the smarthost said 250), deferred
(try again later: 4xx, refused connection, timeout) or refused (5xx).
"""

from __future__ import annotations

import asyncio
import logging
import mailbox
import time
from pathlib import Path
from typing import Protocol

import aiosmtplib

from maskmail import metrics
from maskmail.core.errors import DeliveryDeferred, DeliveryRefused
from maskmail.mail.smtp_pool import SmtpPool

log = logging.getLogger(__name__)


class Outbound(Protocol):
    async def deliver(self, message: bytes, *, sender: str, recipient: str) -> None:
        """Return once the message is accepted; raise DeliveryDeferred or DeliveryRefused."""


def _mail_options(message: bytes, sender: str, recipient: str) -> list[str]:
    options = []
    if not message.isascii():
        options.append("BODY=8BITMIME")
    if not (sender.isascii() and recipient.isascii()):
        options.append("SMTPUTF8")
    return options


class Smarthost:
    """The site's outbound MTA (Postfix in production), over pooled connections."""

    def __init__(self, host: str, port: int, *, timeout: float, local_hostname: str) -> None:
        self.host = host
        self.port = port
        self.pool = SmtpPool(host, port, timeout=timeout, local_hostname=local_hostname)

    async def deliver(self, message: bytes, *, sender: str, recipient: str) -> None:
        started = time.perf_counter()
        result = "error"
        try:
            await self._deliver(message, sender=sender, recipient=recipient)
            result = "accepted"
        except DeliveryRefused:
            result = "refused"
            raise
        except DeliveryDeferred:
            result = "deferred"
            raise
        finally:
            metrics.smarthost_seconds.labels(result).observe(time.perf_counter() - started)

    async def _deliver(self, message: bytes, *, sender: str, recipient: str) -> None:
        try:
            await self.pool.sendmail(
                message,
                sender=sender,
                recipient=recipient,
                mail_options=_mail_options(message, sender, recipient),
            )
        except aiosmtplib.SMTPRecipientsRefused as exc:
            codes = [error.code for error in exc.recipients]
            _raise_for(min(codes, default=451), "the smarthost refused the recipient")
        except aiosmtplib.SMTPResponseException as exc:
            _raise_for(exc.code, "the smarthost answered with an error")
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            log.warning("smarthost %s:%s unavailable: %s", self.host, self.port, type(exc).__name__)
            raise DeliveryDeferred("the smarthost is unavailable") from exc

    async def close(self) -> None:
        await self.pool.close()


def _raise_for(code: int, message: str) -> None:
    log.warning("%s: %s", message, code)
    if 500 <= code < 600:
        raise DeliveryRefused(message, {"code": code})
    raise DeliveryDeferred(message, {"code": code})


class Outbox:
    """A Maildir in the data dir, for running without a smarthost (and for trying it out)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _add(self, message: bytes) -> None:
        # mailbox.Maildir(create=True) makes the folder, then tmp, new and cur, one by one:
        # a second writer between the two steps finds no tmp. Each is made here, as it may
        # already be, before the Maildir is opened.
        for folder in ("tmp", "new", "cur"):
            (self.path / folder).mkdir(mode=0o700, parents=True, exist_ok=True)
        mailbox.Maildir(self.path, create=False).add(message)

    async def deliver(self, message: bytes, *, sender: str, recipient: str) -> None:
        # What a delivering MTA records: the envelope, on top of the message.
        envelope = f"Return-Path: <{sender}>\r\nDelivered-To: {recipient}\r\n".encode()
        try:
            # Maildir writes are blocking file I/O: keep them off the event loop.
            await asyncio.to_thread(self._add, envelope + message)
        except OSError as exc:
            log.error("cannot write to the outbox %s: %s", self.path, exc)
            raise DeliveryDeferred("the outbox is not writable") from exc

    async def close(self) -> None:
        """Nothing stays open between deliveries."""
