"""Client-side load, run in separate processes so the server sees truly parallel callers."""

from __future__ import annotations

import asyncio

import httpx


async def _creates(base_url: str, key: str, count: int) -> list[tuple[int, str]]:
    headers = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=count)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60) as client:

        async def one() -> tuple[int, str]:
            response = await client.post("/v3/relay/addresses", headers=headers)
            body = response.json()
            return response.status_code, body.get("full_address") or body.get("code", "")

        return list(await asyncio.gather(*(one() for _ in range(count))))


def concurrent_creates(base_url: str, key: str, count: int) -> list[tuple[int, str]]:
    """``count`` simultaneous POSTs; each result is (status, full address or error code)."""
    return asyncio.run(_creates(base_url, key, count))
