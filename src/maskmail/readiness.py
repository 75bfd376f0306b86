"""Whether this process can do its work now: the database, its schema, the SMTP listener."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.store.migrate import current_revision, head_revision

# A probe must answer well inside a load balancer's own timeout.
PROBE_TIMEOUT = 2.0
WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}  # noqa: S104


@dataclass(frozen=True)
class Readiness:
    """The checks of one process; ``smtp`` is the listener's ``(host, port)`` in up/smtp."""

    engine: AsyncEngine
    smtp: tuple[str, int] | None = None
    head: str = ""

    @classmethod
    def of(cls, engine: AsyncEngine, smtp: tuple[str, int] | None = None) -> Readiness:
        return cls(engine=engine, smtp=smtp, head=head_revision())

    async def problems(self) -> dict[str, str]:
        """What is missing, by check name; empty when the process is ready."""
        found: dict[str, str] = {}
        try:
            async with asyncio.timeout(PROBE_TIMEOUT):
                revision = await self._revision()
        except Exception as exc:  # any failure to answer means not ready
            found["database"] = f"does not answer ({type(exc).__name__})"
        else:
            if revision != self.head:
                found["schema"] = (
                    f"at {revision or 'no revision'}, not {self.head}: run maskmail db upgrade"
                )
        if self.smtp is not None:
            problem = await smtp_problem(*self.smtp)
            if problem:
                found["smtp"] = problem
        return found

    async def _revision(self) -> str | None:
        async with self.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
            return await conn.run_sync(current_revision)


async def smtp_problem(host: str, port: int) -> str | None:
    """None when the listener answers a connection with its 220 greeting."""
    host = WILDCARDS.get(host, host)
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            reader, writer = await asyncio.open_connection(host, port)
            try:
                greeting = await reader.readline()
                writer.write(b"QUIT\r\n")
                await writer.drain()
            finally:
                writer.close()
    except (OSError, TimeoutError) as exc:
        return f"no connection to the SMTP listener ({type(exc).__name__})"
    if not greeting.startswith(b"220"):
        return f"the SMTP listener answers {greeting[:3].decode('ascii', 'replace')!r}, not 220"
    return None
