"""Why the viewer's catch-all makes no new address now, for the subdomain and domains
pages: the owner's limits of addresses made on first mail (docs/mail.md)."""

from __future__ import annotations

from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.config import Settings
from maskmail.core.first_mail import OwnerLimits, pause_reason
from maskmail.store import first_mail
from maskmail.store.clock import now


async def pause_notice(request: Request, conn: AsyncConnection, user_id: int) -> str:
    """The reason, as a sentence, or "" while catch-all makes addresses."""
    settings: Settings = request.app.state.settings
    limits = OwnerLimits(settings.first_mail_per_hour, settings.first_mail_max)
    reason = pause_reason(await first_mail.owner_made(conn, user_id, limits, now()), limits)
    return "" if reason is None else reason[:1].upper() + reason[1:] + "."
