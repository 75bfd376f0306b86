"""A sending MTA in miniature: tagged letters, sent concurrently, retried on 4xx as MTAs do."""

from __future__ import annotations

import asyncio
import re
import secrets
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import aiosmtplib
import httpx

from tests.sink import HOST, Received

SENDER = "alice@example.com"
TAG = re.compile(rb"Subject: load ([0-9a-f]{16})")
# No answer at all (refused connection, reset, timeout): a sender keeps the message and retries.
NO_ANSWER = 0


@dataclass
class Letter:
    """One message with a tag the sink can find it by; retries send the very same bytes."""

    rcpt: str
    tag: str
    data: bytes
    accepted: bool = False
    attempts: int = 0


def letter(rcpt: str) -> Letter:
    tag = secrets.token_hex(8)
    data = (
        f"From: Alice <{SENDER}>\r\nTo: {rcpt}\r\nSubject: load {tag}\r\n"
        f"Message-ID: <{tag}@example.com>\r\n\r\nLetter {tag}.\r\n"
    ).encode()
    return Letter(rcpt, tag, data)


async def attempt(port: int, item: Letter, timeout: float = 30) -> int:
    """One delivery attempt; the SMTP code that decided it, or NO_ANSWER."""
    item.attempts += 1
    try:
        await aiosmtplib.send(
            item.data,
            sender=SENDER,
            recipients=[item.rcpt],
            hostname=HOST,
            port=port,
            timeout=timeout,
            start_tls=False,
        )
    except aiosmtplib.SMTPRecipientsRefused as exc:
        return min(error.code for error in exc.recipients)
    except aiosmtplib.SMTPResponseException as exc:
        return exc.code
    except (aiosmtplib.SMTPException, OSError, TimeoutError):
        return NO_ANSWER
    item.accepted = True
    return 250


def tags_in(messages: Iterable[Received]) -> Counter[str]:
    """How many times the sink received each tagged letter."""
    found: Counter[str] = Counter()
    for message in messages:
        match = TAG.search(message.data)
        if match is not None:
            found[match.group(1).decode()] += 1
    return found


async def forwarded_counts(api_url: str, key: str, address_ids: Iterable[int]) -> dict[int, int]:
    """num_forwarded of each address, as the API reports it."""
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=api_url, headers=headers, timeout=30) as api:
        counts = {}
        for address_id in address_ids:
            response = await api.get(f"/v3/relay/addresses/{address_id}")
            assert response.status_code == 200, response.text
            counts[address_id] = int(response.json()["num_forwarded"])
        return counts


async def create_addresses(api_url: str, key: str, count: int) -> dict[int, str]:
    """``count`` relay addresses, by id."""
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=api_url, headers=headers, timeout=30) as api:
        made = {}
        for _ in range(count):
            response = await api.post("/v3/relay/addresses")
            assert response.status_code == 200, response.text
            body = response.json()
            made[int(body["id"])] = str(body["full_address"])
        return made


async def retry_until_accepted(port: int, items: Iterable[Letter], deadline: float) -> None:
    """What the sending MTAs do once the relay is back: retry each held letter until 250."""
    loop = asyncio.get_running_loop()
    for item in items:
        while not item.accepted:
            code = await attempt(port, item)
            assert code == 250 or code == NO_ANSWER or 400 <= code < 500, (item.tag, code)
            if not item.accepted:
                assert loop.time() < deadline, f"letter {item.tag} was never accepted"
                await asyncio.sleep(0.2)
