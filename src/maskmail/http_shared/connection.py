"""The per-request database connection both HTTP doors' endpoints receive."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncConnection

from maskmail.store.engine import transaction

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


async def get_conn(request: Request) -> AsyncIterator[AsyncConnection]:
    """One transaction per request, committed before the response is sent; read-only
    for the methods that change nothing."""
    readonly = request.method in SAFE_METHODS
    async with transaction(request.app.state.engine, readonly=readonly) as conn:
        yield conn


Conn = Annotated[AsyncConnection, Depends(get_conn, scope="function")]
