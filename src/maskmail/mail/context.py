"""What every mail path needs, built once at start-up, and the small facts of a session."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.core.envelope import normal_domain
from maskmail.core.first_mail import FloodGuard, OwnerLimits
from maskmail.mail.dkim import Signer
from maskmail.mail.outbound import Outbound
from maskmail.mail.pending_counts import PendingCounts
from maskmail.mail.spam import SpamJudge
from maskmail.store.driver import DriverPool


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
    # MASKMAIL_PGP_TIMEOUT: an encryption that takes longer defers the message (451).
    pgp_timeout: float = 30
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    # Hosts whose Authentication-Results count; empty: the newest header only.
    authserv_ids: tuple[str, ...] = ()
    # Threads for rewriting replies, of their own: the default executor (None) also
    # resolves host names, and must never wait behind rewrites (nor they behind it).
    rewriters: Executor | None = None
    # Domains received for besides ``domain`` (which new addresses get): those of
    # addresses made before MASKMAIL_DOMAIN changed.
    older_domains: frozenset[str] = frozenset()
    # MASKMAIL_MAX_ADDRESSES_PER_USER, for addresses made on first mail (0: no limit).
    max_addresses_per_user: int = 0
    # New addresses made on first mail, per sender (core/first_mail.py).
    first_mail: FloodGuard = field(default_factory=FloodGuard)
    # And per owner, counted in the database (MASKMAIL_FIRST_MAIL_PER_HOUR and _MAX).
    first_mail_limits: OwnerLimits = field(default_factory=OwnerLimits)
    # Driver connections kept checked out between scripts (``DriverPool``'s ``keep``):
    # ``mail_plane`` keeps one, and hands it back when it stops. A message runs its
    # scripts one after another, and each would otherwise take a connection from
    # SQLAlchemy's pool and give it back (a reset, a greenlet switch) again.
    kept_drivers: int = 0
    # MASKMAIL_ACTIVITY_DAYS: a count written late to a day older than these adds to the
    # address's totals only (mail/pending_counts.py).
    activity_days: int = 90
    # Driver connections from the engine's pool, for the statements every message runs:
    # ``drivers.run`` a store script, one transaction per call.
    drivers: DriverPool = field(init=False)
    # Counts of delivered messages the database was not there for, retried until
    # written (mail/counting.py); ``mail_plane`` saves what is left when it stops.
    pending_counts: PendingCounts = field(init=False)
    # Every domain mail is accepted for: the relay's domains (services/relay_domains.py).
    domains: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "drivers", DriverPool(self.engine, keep=_keep(self)))
        object.__setattr__(self, "pending_counts", PendingCounts(self.drivers, self.activity_days))
        object.__setattr__(self, "domain", normal_domain(self.domain))
        domains = frozenset(map(normal_domain, self.older_domains | {self.domain}))
        object.__setattr__(self, "domains", domains)


# Below this many connections in the pool, the mail plane keeps none: under ``up`` the
# API keeps up to half of the same pool, and SQLAlchemy's own users need one left.
MIN_POOL_TO_KEEP = 3


def _keep(ctx: MailContext) -> int:
    size = getattr(ctx.engine.sync_engine.pool, "size", lambda: 0)()
    return ctx.kept_drivers if size >= MIN_POOL_TO_KEEP else 0


def peer_ip(session: Any) -> str | None:
    peer = getattr(session, "peer", None)
    return str(peer[0]) if isinstance(peer, tuple) and peer else None


def envelope_sender(env: Any) -> str:
    """MAIL FROM as given; aiosmtpd keeps a bounce's null sender as "<>" (it must stay
    truthy for aiosmtpd), which is the empty sender here."""
    return "" if env.mail_from in (None, "<>") else str(env.mail_from)
