"""The mailbox rules: which of a user's mailboxes may be added, and how one proves it is
theirs."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from maskmail.core.addresses import normalize_mailbox
from maskmail.core.errors import InvalidAddress
from maskmail.core.pgp import DeliveryKey
from maskmail.core.windows import check_day

# How long the link and the code stay good.
VERIFY_SECONDS = 24 * 60 * 60
CODE_DIGITS = 6


@dataclass(frozen=True, slots=True)
class Proof:
    """What the verification message carries; only their hashes are stored."""

    token: str
    code: str

    @property
    def token_hash(self) -> str:
        return digest(self.token)

    @property
    def code_hash(self) -> str:
        return digest(self.code)


def new_proof() -> Proof:
    return Proof(secrets.token_urlsafe(32), f"{secrets.randbelow(10**CODE_DIGITS):06d}")


def digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class MailLimits:
    """Verification messages one user may have sent in any day: to one address, and to
    all together (0: no limit)."""

    per_address: int
    per_user: int


def address_key(email: str) -> str:
    """What the limits know an address by once its mailbox is gone: the SHA-256 of the
    address, lower-cased (domains and, in practice, local parts ignore case)."""
    return digest(email.lower())


def check_mail_rate(
    sent: Sequence[tuple[str, int]], key: str, limits: MailLimits, now: int
) -> None:
    """RateLimited when one more verification message to the address ``key`` would pass
    a limit; ``sent`` are the user's messages of the day, (address key, time), oldest
    first. Only the user's own messages count, so that the answer tells nothing of
    other accounts."""
    to_it = [t for k, t in sent if k == key]
    check_day(
        to_it,
        limits.per_address,
        now,
        f"this mailbox was sent {limits.per_address} verification messages in a day",
    )
    check_day(
        [t for _, t in sent],
        limits.per_user,
        now,
        f"this account sent {limits.per_user} verification messages in a day",
    )


def new_mailbox(email: str, relay_domains: Iterable[str]) -> str:
    """The mailbox to add, checked: a valid address that is not at one of our domains
    (mail to it would come back to the relay)."""
    try:
        mailbox = normalize_mailbox(email)
    except InvalidAddress as exc:
        raise InvalidAddress(exc.message, {"field": "email"}) from exc
    domain = mailbox.rpartition("@")[2]
    for ours in relay_domains:
        if domain == ours or domain.endswith("." + ours):
            raise at_relay_domain()
    return mailbox


def at_relay_domain() -> InvalidAddress:
    return InvalidAddress("a mailbox cannot be at the relay's own domain", {"field": "email"})


def notice(*, to: str, sender: str, subject: str, when: float, text: str) -> bytes:
    """A message of ours to the owner, marked as sent by a machine."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = subject
    message["Date"] = formatdate(when, usegmt=True)
    message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2])
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(text)
    return message.as_bytes()


def verification_message(*, to: str, sender: str, link: str, code: str, when: float) -> bytes:
    """The message that asks the owner of ``to`` to confirm it."""
    return notice(
        to=to,
        sender=sender,
        subject="Confirm your mailbox for maskmail",
        when=when,
        text="Someone (we hope you) asked maskmail to forward mail to this address.\n\n"
        f"Confirm it by opening this link within 24 hours:\n\n{link}\n\n"
        f"or by entering this code: {code}\n\n"
        "If you did not ask for this, ignore this message; nothing will be forwarded here.\n",
    )


@dataclass(frozen=True, slots=True)
class Destination:
    """One of an address owner's mailboxes, as the mail plane sees it."""

    id: int
    email: str
    verified: bool
    paused: bool
    default: bool
    # Chosen for this address (PUT .../mailboxes); none chosen means the default.
    chosen: bool
    # Forwards to it are encrypted to this key (PUT .../pgp).
    key: DeliveryKey | None = None


def _of_address(mailboxes: Sequence[Destination]) -> list[Destination]:
    """The address's verified mailboxes: those it chose, or the default one."""
    chosen = [m for m in mailboxes if m.chosen] or [m for m in mailboxes if m.default]
    return [m for m in chosen if m.verified]


def targets(mailboxes: Sequence[Destination]) -> tuple[str, ...]:
    """Where a forward goes: the address's mailboxes, each once, but the paused."""
    return tuple(m.email for m in _of_address(mailboxes) if not m.paused)


def senders(mailboxes: Sequence[Destination]) -> tuple[str, ...]:
    """Who may reply or write first through the address: any of its mailboxes (a paused
    one too: its owner still writes from it)."""
    return tuple(m.email for m in _of_address(mailboxes))


def pause_notice(*, to: str, sender: str, mailbox_id: int, when: float) -> bytes:
    """Tells the owner, at their default mailbox, that one of theirs stopped taking mail."""
    return notice(
        to=to,
        sender=sender,
        subject="maskmail paused forwarding to one of your mailboxes",
        when=when,
        text=f"Your mailbox {mailbox_id} refused forwarded mail again and again, so "
        "maskmail stopped forwarding to it. Your addresses keep forwarding to your other "
        "mailboxes.\nOnce it takes mail again, resume it with PATCH "
        f'/v3/relay/mailboxes/{mailbox_id} and the body {{"paused": false}}.\n',
    )


def encryption_notice(*, to: str, sender: str, mailbox_id: int, reason: str, when: float) -> bytes:
    """Tells the owner, once, that forwards to a mailbox wait because its key failed.
    Nothing of the waiting mail is in it (it goes out unencrypted)."""
    return notice(
        to=to,
        sender=sender,
        subject="maskmail cannot encrypt mail to one of your mailboxes",
        when=when,
        text=f"maskmail could not encrypt a forward to your mailbox {mailbox_id} with its "
        f"OpenPGP key ({reason}). Mail for it is held back, never sent unencrypted: the "
        "sending servers retry for a few days.\nReplace the key with PUT "
        f"/v3/relay/mailboxes/{mailbox_id}/pgp, or remove it with DELETE on the same path "
        "to receive forwards unencrypted.\n",
    )
