"""`maskmail up` with debug logging in JSON: every line parses, and none holds a secret."""

from __future__ import annotations

import contextlib
import json
import re
import smtplib
from collections import Counter
from email import message_from_bytes, policy

import httpx
import pytest

from tests.e2e.conftest import Deployment
from tests.sink import HOST, Sink
from tests.support import free_port, running, wait_for_port

pytestmark = pytest.mark.slow
OWNER = "Owner.Secret@Example.com"
SECOND = "Second.Hidden@Example.org"  # the owner's other mailbox
BODY = "body-marker-7f3a9c"


def message(sender: str, rcpt: str, n: int) -> bytes:
    return (
        f"From: {sender}\r\nTo: {rcpt}\r\nSubject: s{n}\r\nMessage-ID: <m{n}@example.net>\r\n"
        f"\r\n{BODY} for {OWNER}\r\n"
    ).encode()


def test_debug_json_logs_name_no_owner_key_or_body(deployment: Deployment, sink: Sink) -> None:
    key = deployment.user_with_key(OWNER)
    api_port, smtp_port = free_port(), free_port()
    env = {
        **deployment.env,
        "MASKMAIL_SMARTHOST": f"{HOST}:{sink.port}",
        "MASKMAIL_LOG_LEVEL": "DEBUG",
        "MASKMAIL_LOG_FORMAT": "json",
    }
    log = deployment.tmp / "up.log"
    up = ("up", "--access-log", "--api-port", str(api_port), "--smtp-port", str(smtp_port))
    with running(env, *up, port=api_port, log=log):
        wait_for_port(smtp_port)
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=f"http://{HOST}:{api_port}", headers=headers) as api:
            created = api.post("/v3/relay/addresses", json={"description": "shop"}).json()
            assert api.get("/v3/relay/addresses").status_code == 200
            # A second mailbox, verified by the code mailed to it, and the address
            # forwarding to both: every line is scanned for either.
            second = api.post("/v3/relay/mailboxes", json={"email": SECOND}).json()
            [mailed] = sink.messages
            text = message_from_bytes(mailed.data, policy=policy.default)
            body = text.get_body(("plain",))
            assert body is not None
            [code] = re.findall(r"code: (\S+)", body.get_content())
            verify = api.post(f"/v3/relay/mailboxes/{second['id']}/verify", json={"code": code})
            assert verify.status_code == 200, verify.text
            boxes = [m["id"] for m in api.get("/v3/relay/mailboxes").json()]
            chosen = api.put(
                f"/v3/relay/addresses/{created['id']}/mailboxes", json={"mailbox_ids": boxes}
            )
            assert chosen.status_code == 200 and len(boxes) == 2, chosen.text
            verification = len(sink.messages)
            assert api.get(f"/v3/relay/addresses/{key}").status_code in {404, 422}
            address = created["full_address"]
            with smtplib.SMTP(HOST, smtp_port, timeout=30) as client:
                client.sendmail(
                    "alice@example.net", [address], message("alice@example.net", address, 1)
                )
                # The smarthost refuses, naming the owner: the refusal is logged, its text is not.
                sink.handler.reply = f"550 5.1.1 <{OWNER}>: mailbox unavailable"
                with pytest.raises(smtplib.SMTPDataError):
                    client.sendmail(
                        "bob@example.net", [address], message("bob@example.net", address, 2)
                    )
                sink.handler.reply = None
            forwards = sink.messages[verification:]
            rcpts = sorted(r.lower() for m in forwards for r in m.rcpt_tos)
            assert rcpts == sorted([OWNER.lower(), SECOND.lower()])
            forward = forwards[0]
            alias = str(message_from_bytes(forward.data, policy=policy.default)["Reply-To"])
            # The owner's reply, whose envelope sender is the owner's mailbox: whether it
            # is relayed is not this test's concern, its logs are.
            with (
                smtplib.SMTP(HOST, smtp_port, timeout=30) as client,
                contextlib.suppress(smtplib.SMTPException),
            ):
                client.sendmail(OWNER, [alias], message(OWNER, alias, 3))
            assert api.delete(f"/v3/relay/addresses/{created['id']}").status_code < 300
    lines = log.read_text().splitlines()
    assert len(lines) > 5
    parsed = [json.loads(line) for line in lines]
    for line, fields in zip(lines, parsed, strict=True):
        assert {"time", "level", "event"} <= fields.keys(), line
        lowered = line.lower()
        assert OWNER.lower() not in lowered and SECOND.lower() not in lowered, line
        assert key not in line and BODY not in line and code not in line, line
    assert any(f["level"] == "debug" for f in parsed)  # debug really was on
    # uvicorn's lines, server and access alike, are JSON lines like maskmail's own.
    assert {"uvicorn.error", "uvicorn.access"} <= {f["logger"] for f in parsed}
    # The refused message's lines (the smarthost's answer, then the forward's) share an id.
    per_message = Counter(f["message_id"] for f in parsed if "message_id" in f)
    assert per_message and max(per_message.values()) >= 2, parsed
    # uvicorn's access line for the key-in-path request carries a request id, and no key.
    [access] = [f for f in parsed if f["logger"] == "uvicorn.access" and "mm_live_" in f["event"]]
    assert "request_id" in access and "mm_live_<redacted>" in access["event"]
