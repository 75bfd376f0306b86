"""What every mail path needs, built once at start-up, and the small facts of a session."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.mail.dkim import Signer
from maskmail.mail.outbound import Outbound
from maskmail.mail.spam import SpamJudge
from maskmail.store.raw import RawSource, Source


@dataclass(frozen=True, slots=True)
class MailContext:
    engine: AsyncEngine
    domain: str
    hostname: str
    outbound: Outbound
    judge: SpamJudge
    bounce_secret: bytes
    signer: Signer | None = None
    bounce_pause_threshold: int = 5
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    # Hosts whose Authentication-Results count; empty: the newest header only.
    authserv_ids: tuple[str, ...] = ()
    # Driver connections from the engine's pool, for the statements every message runs.
    raw: RawSource = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "raw", Source(self.engine))


def peer_ip(session: Any) -> str | None:
    peer = getattr(session, "peer", None)
    return str(peer[0]) if isinstance(peer, tuple) and peer else None


def envelope_sender(env: Any) -> str:
    """MAIL FROM as given; aiosmtpd keeps a bounce's null sender as "<>" (it must stay
    truthy for aiosmtpd), which is the empty sender here."""
    return "" if env.mail_from in (None, "<>") else str(env.mail_from)
