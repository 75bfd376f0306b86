"""What happens to one message for one relay address: a pure decision, and what it counts."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from maskmail.core import reverse
from maskmail.core.envelope import parse_mailbox
from maskmail.core.errors import (
    AddressDisabled,
    MaskmailError,
    NotOwner,
    NotYetChecked,
    RelayDenied,
    ReplyLoops,
)
from maskmail.core.records import RelayAddress
from maskmail.core.senders import Authentication

Counter = Literal["num_forwarded", "num_blocked", "num_replied", "num_spam"]


class Action(StrEnum):
    FORWARD = "forward"  # deliver to the owner's mailbox
    BLOCK = "block"  # accept and discard: the address is disabled
    SPAM = "spam"  # accept and discard: spam, and the owner blocks spam
    REPLY = "reply"  # the owner answers through a reverse alias (the replies issue)
    DROP = "drop"  # accept and discard without counting: our own mail came back (a loop)
    REFUSE = "refuse"  # answer with a permanent error: forwarding would loop


@dataclass(frozen=True, slots=True)
class Facts:
    """What the mail plane learned about a message before deciding."""

    # The mailboxes that take this address's mail (``core.mailboxes.targets``).
    owner_mailboxes: tuple[str, ...]
    spam: bool = False
    # The message carries the loop marker we add to every forward.
    looped: bool = False
    # The owner's mailbox is itself a relay address (at our domain).
    owner_is_relay: bool = False


@dataclass(frozen=True, slots=True)
class Verdict:
    action: Action
    reason: str
    # Where it goes: the owner's mailboxes for a forward, the outside sender for a reply.
    targets: tuple[str, ...] = ()
    spam: bool = False
    # For REFUSE: the error the mail plane answers with.
    refusal: type[RelayDenied] = RelayDenied

    @property
    def counters(self) -> tuple[Counter, ...]:
        """The counters this verdict adds one to, once it has been carried out.

        For a forward that is after the smarthost accepted it (SPEC: counters). Spam
        counts whatever happened next, so a delivered spam counts twice.
        """
        if self.action is Action.FORWARD:
            return ("num_forwarded", "num_spam") if self.spam else ("num_forwarded",)
        if self.action is Action.BLOCK:
            return ("num_blocked",)
        if self.action is Action.SPAM:
            return ("num_spam",)
        if self.action is Action.REPLY:
            return ("num_replied",)
        return ()


def decide(address: RelayAddress, facts: Facts) -> Verdict:
    """The verdict for a message to ``address``; no I/O, so every branch is unit-tested.

    Order matters: a loop is stopped before anything is counted; a disabled address
    blocks even spam (the owner asked for nothing to arrive); spam is judged last.
    """
    if facts.looped:
        return Verdict(Action.DROP, "the message carries our own loop marker")
    if not address.enabled:
        return Verdict(Action.BLOCK, "the address is disabled")
    if facts.owner_is_relay:
        return Verdict(Action.REFUSE, "the owner's mailbox is itself a relay address")
    if facts.spam and address.block_spam:
        return Verdict(Action.SPAM, "spam, and the owner blocks spam", spam=True)
    if not facts.owner_mailboxes:
        return Verdict(Action.BLOCK, "no mailbox of the address takes mail now")
    return Verdict(
        Action.FORWARD,
        "spam, forwarded as the owner allows" if facts.spam else "forward to the owner",
        targets=facts.owner_mailboxes,
        spam=facts.spam,
    )


@dataclass(frozen=True, slots=True)
class ReplyFacts:
    """What the mail plane learned about a message to a reverse alias."""

    # The envelope sender is the owner's mailbox.
    envelope_is_owner: bool
    # The From header is the owner's mailbox; None before the headers arrive (at RCPT).
    header_is_owner: bool | None = None
    # What a trusted relay's Authentication-Results say; None when not from one.
    authentication: Authentication | None = None


# The owner reads these in the bounce their own server sends them.
NOT_OWNER = "Only the owner of this relay address may send through it"
FORGED_FROM = "The From header is not the owner's address"
NOT_AUTHENTICATED = "SPF and DKIM did not pass for the owner's domain"
NOT_YET_CHECKED = "SPF and DKIM could not be checked just now; the reply will be tried again"
DISABLED = "This relay address is disabled; enable it to reply through it"
LOOPS = "This reverse alias stands for an address of this relay; a reply would loop"


def _loops(address: RelayAddress, outside: str) -> bool:
    """The outside sender is a reverse alias of ours, or this relay address itself: the
    reply could only come back here, from the relay address, and be refused or returned."""
    try:
        mailbox = parse_mailbox(outside)
    except MaskmailError:
        return False
    relay_domain = address.domain.lower()
    if mailbox.domain != relay_domain and not mailbox.domain.endswith("." + relay_domain):
        return False
    return reverse.is_alias_local(mailbox.local) or str(mailbox).lower() == (
        address.full_address.lower()
    )


def decide_reply(address: RelayAddress, facts: ReplyFacts, outside: str) -> Verdict:
    """The verdict for the owner writing to ``outside`` through ``address``.

    Who is asking is settled first: a stranger learns nothing, not even that the
    address is disabled.
    """
    if not facts.envelope_is_owner:
        return Verdict(Action.REFUSE, NOT_OWNER, refusal=NotOwner)
    if facts.header_is_owner is False:
        return Verdict(Action.REFUSE, FORGED_FROM, refusal=NotOwner)
    if facts.authentication is Authentication.FAIL:
        return Verdict(Action.REFUSE, NOT_AUTHENTICATED, refusal=NotOwner)
    if facts.authentication is Authentication.UNFINISHED:
        return Verdict(Action.REFUSE, NOT_YET_CHECKED, refusal=NotYetChecked)
    if not address.enabled:
        return Verdict(Action.REFUSE, DISABLED, refusal=AddressDisabled)
    if _loops(address, outside):
        return Verdict(Action.REFUSE, LOOPS, refusal=ReplyLoops)
    return Verdict(Action.REPLY, "a reply from the owner", targets=(outside,))
