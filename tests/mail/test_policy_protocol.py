"""The policy protocol's reader and writer: requests as Postfix sends them, and limits."""

from __future__ import annotations

import asyncio

import pytest

from maskmail.mail.policy_protocol import (
    MAX_ATTRIBUTES,
    MAX_LINE,
    PolicyProtocolError,
    answer,
    read_request,
)

pytestmark = pytest.mark.anyio


def reader_of(data: bytes) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=MAX_LINE)
    reader.feed_data(data)
    reader.feed_eof()
    return reader


async def test_requests_are_read_one_by_one() -> None:
    reader = reader_of(
        b"request=smtpd_access_policy\nprotocol_state=RCPT\nsender=\n"
        b"Recipient=a=b@relay.test\n\nrequest=smtpd_access_policy\n\n"
    )
    first = await read_request(reader)
    assert first == {
        "request": "smtpd_access_policy",
        "protocol_state": "RCPT",
        "sender": "",
        "recipient": "a=b@relay.test",
    }
    assert await read_request(reader) == {"request": "smtpd_access_policy"}
    assert await read_request(reader) is None


async def test_utf8_is_kept_and_other_bytes_replaced() -> None:
    reader = reader_of("recipient=jöe@relay.test\nsender=\xff@x\n\n".encode("latin-1"))
    request = await read_request(reader)
    assert request == {"recipient": "j\ufffde@relay.test", "sender": "\ufffd@x"}
    reader = reader_of("recipient=jöe@relay.test\n\n".encode())
    assert await read_request(reader) == {"recipient": "jöe@relay.test"}


@pytest.mark.parametrize(
    "data",
    [
        b"recipient=" + b"x" * MAX_LINE + b"\n\n",
        b"no equals sign\n\n",
        b"=value\n\n",
        b"bad name=1\n\n",
        b"\n",
        b"".join(b"a%d=1\n" % i for i in range(MAX_ATTRIBUTES + 1)) + b"\n",
        b"recipient=half a request",
        b"recipient=x\n",
    ],
)
async def test_broken_requests_are_protocol_errors(data: bytes) -> None:
    with pytest.raises(PolicyProtocolError):
        await read_request(reader_of(data))


def test_answers_are_one_action_line() -> None:
    assert answer("DUNNO") == b"action=DUNNO\n\n"
    for bad in ("", "REJECT x\naction=OK", "x\r"):
        with pytest.raises(ValueError, match="one non-empty line"):
            answer(bad)
