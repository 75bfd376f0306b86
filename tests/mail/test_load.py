"""Counters stay exact under concurrent load: what the sink got equals what the API says."""

from __future__ import annotations

import asyncio
import smtplib

import pytest

from tests.mail.conftest import HOST, Mask, Masks, Sink, message

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
MESSAGES = 500
CONNECTIONS = 8


def send_many(port: int, jobs: list[Mask]) -> int:
    """One connection sends every job in turn; returns how many were accepted."""
    accepted = 0
    with smtplib.SMTP(HOST, port, timeout=60) as client:
        for mask in jobs:
            refused = client.sendmail("load@example.com", [mask.address], message(to=mask.address))
            accepted += not refused
    return accepted


async def test_500_messages_over_8_connections_count_exactly(
    relay: int, sink: Sink, masks: Masks
) -> None:
    enabled = [await masks.make() for _ in range(3)]
    disabled = [await masks.make(enabled=False) for _ in range(2)]
    everyone = enabled + disabled
    plan = [everyone[i % len(everyone)] for i in range(MESSAGES)]
    per_connection = [plan[i::CONNECTIONS] for i in range(CONNECTIONS)]

    accepted = await asyncio.gather(
        *(asyncio.to_thread(send_many, relay, jobs) for jobs in per_connection)
    )

    assert sum(accepted) == MESSAGES
    delivered: dict[str, int] = {}
    for got in sink.messages:
        for rcpt in got.rcpt_tos:
            delivered[rcpt] = delivered.get(rcpt, 0) + 1
    for mask in enabled:
        sent = plan.count(mask)
        counters = await mask.counters()
        assert counters["num_forwarded"] == sent == delivered[mask.owner]
        assert counters["num_blocked"] == 0
    for mask in disabled:
        counters = await mask.counters()
        assert counters["num_blocked"] == plan.count(mask)
        assert counters["num_forwarded"] == 0
        assert mask.owner not in delivered
    assert len(sink.messages) == sum(plan.count(m) for m in enabled)
