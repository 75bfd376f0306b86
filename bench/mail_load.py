"""The mail load: aiosmtplib over a few persistent connections, in its own process.

Every message is built before the clock starts: ``size`` bytes, a unique Message-ID, to
a relay address drawn at random (seeded) from the list on stdin. It prints JSON: when
each message's send began (the system-wide monotonic clock, as the sink records
arrivals), to which address, and what failed.

    python -m bench.mail_load --port P --count N --connections C --size B --seed S < addresses
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from dataclasses import dataclass, field

import aiosmtplib

SENDERS = 50
LINE = b"The quick brown fox jumps over the lazy dog, again and again and again.\r\n"


@dataclass(frozen=True)
class Message:
    message_id: str
    sender: str
    recipient: str
    data: bytes


@dataclass
class Outcome:
    started: dict[str, float] = field(default_factory=dict)
    recipients: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def build(count: int, size: int, addresses: list[str], seed: int) -> list[Message]:
    """``count`` messages of about ``size`` bytes each, from a few dozen outside senders."""
    rng = random.Random(seed)
    messages = []
    for n in range(count):
        sender = f"sender{rng.randrange(SENDERS)}@outside.example"
        recipient = rng.choice(addresses)
        message_id = f"bench-{seed}-{n}@outside.example"
        head = (
            f"From: Sender {n} <{sender}>\r\nTo: {recipient}\r\n"
            f"Subject: benchmark message {n}\r\nDate: Sun, 22 Nov 2026 06:00:00 +0000\r\n"
            f"Message-ID: <{message_id}>\r\nMIME-Version: 1.0\r\n"
            "Content-Type: text/plain; charset=us-ascii\r\n\r\n"
        ).encode()
        body = LINE * max(1, (size - len(head)) // len(LINE))
        messages.append(Message(message_id, sender, recipient, head + body))
    return messages


async def _connection(port: int, queue: list[Message], outcome: Outcome) -> None:
    client = aiosmtplib.SMTP(hostname="127.0.0.1", port=port, timeout=60, start_tls=False)
    await client.connect()
    try:
        while queue:
            message = queue.pop()
            outcome.started[message.message_id] = time.monotonic()
            outcome.recipients[message.message_id] = message.recipient
            try:
                await client.sendmail(message.sender, [message.recipient], message.data)
            except aiosmtplib.SMTPException as exc:
                outcome.errors.append(f"{message.message_id}: {exc}")
                del outcome.started[message.message_id]
                if not client.is_connected:
                    await client.connect()
    finally:
        if client.is_connected:
            await client.quit()


async def send_all(port: int, messages: list[Message], connections: int) -> Outcome:
    outcome = Outcome()
    queue = list(reversed(messages))
    await asyncio.gather(*(_connection(port, queue, outcome) for _ in range(connections)))
    return outcome


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.mail_load")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--connections", type=int, default=8)
    p.add_argument("--size", type=int, default=10_240)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    addresses = sys.stdin.read().split()
    messages = build(args.count, args.size, addresses, args.seed)
    outcome = asyncio.run(send_all(args.port, messages, args.connections))
    json.dump(
        {"started": outcome.started, "recipients": outcome.recipients, "errors": outcome.errors},
        sys.stdout,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
