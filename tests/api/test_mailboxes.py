"""/v3/relay/mailboxes and /v3/relay/addresses/{id}/mailboxes, on both backends, with the
verification message caught by a real SMTP smarthost."""

from __future__ import annotations

import email
import email.policy
import mailbox
import os
import re
from collections.abc import AsyncIterator
from email.message import EmailMessage
from pathlib import Path

import dkim
import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from maskmail.mail.dkim import generate_key, txt_value
from maskmail.store.addresses import create_address
from maskmail.store.engine import transaction
from tests.api.conftest import BASE, DOMAIN, Caller, ClientFactory, UserFactory
from tests.sink import Sink

pytestmark = pytest.mark.anyio

MAILBOXES = "/v3/relay/mailboxes"


@pytest.fixture
async def api(reconfigured: ClientFactory, sink: Sink) -> AsyncIterator[httpx.AsyncClient]:
    async with reconfigured(smarthost=f"127.0.0.1:{sink.port}", max_mailboxes_per_user=3) as c:
        yield c


@pytest.fixture
async def carol(make_user: UserFactory) -> Caller:
    return await make_user("Carol@Example.com")


def _proof(sink: Sink, recipient: str) -> tuple[str, str]:
    """The token and code of the last verification message to ``recipient``."""
    sent = [m for m in sink.messages if m.rcpt_tos == [recipient]]
    assert sent, f"no verification message reached {recipient}"
    parsed = email.message_from_bytes(sent[-1].data, policy=email.policy.default)
    assert isinstance(parsed, EmailMessage)
    text = parsed.get_content()
    token = re.search(r"verify\?token=([A-Za-z0-9_-]+)", text)
    code = re.search(r"code: (\d{6})", text)
    assert token and code
    return token.group(1), code.group(1)


async def _add(api: httpx.AsyncClient, caller: Caller, email: str) -> dict[str, object]:
    answer = await api.post(MAILBOXES, json={"email": email}, headers=caller.headers)
    assert answer.status_code == 200, answer.text
    body: dict[str, object] = answer.json()
    return body


async def test_mailbox_one_is_the_users_address(api: httpx.AsyncClient, carol: Caller) -> None:
    answer = await api.get(MAILBOXES, headers=carol.headers)
    assert answer.status_code == 200
    [one] = answer.json()
    assert set(one) == {"id", "email", "verified", "default", "created_time"}
    assert (one["email"], one["verified"], one["default"]) == ("Carol@Example.com", True, True)


async def test_added_mailbox_is_unverified_and_mailed(
    api: httpx.AsyncClient, carol: Caller, sink: Sink
) -> None:
    added = await _add(api, carol, "carol.work@example.net")
    assert (added["verified"], added["default"]) == (False, False)
    [message] = sink.messages
    assert message.rcpt_tos == ["carol.work@example.net"]
    assert message.mail_from == "<>"
    listed = (await api.get(MAILBOXES, headers=carol.headers)).json()
    assert [m["email"] for m in listed] == ["Carol@Example.com", "carol.work@example.net"]


@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
async def test_the_link_verifies_once_without_a_key(
    api: httpx.AsyncClient, carol: Caller, sink: Sink
) -> None:
    added = await _add(api, carol, "link@example.net")
    token, _ = _proof(sink, "link@example.net")
    # The link's page (tests/api/test_mailbox_verify_limits.py) posts the token back.
    first = await api.post(f"{MAILBOXES}/verify", params={"token": token})
    assert first.status_code == 200, first.text
    assert "link@example.net is verified" in first.text
    listed = (await api.get(MAILBOXES, headers=carol.headers)).json()
    assert [m["verified"] for m in listed if m["id"] == added["id"]] == [True]
    again = await api.post(f"{MAILBOXES}/verify", params={"token": token})
    assert again.status_code == 404
    wrong = await api.post(f"{MAILBOXES}/verify", params={"token": "x" * 43})
    assert wrong.status_code == 404


async def test_the_code_verifies_and_wrong_codes_are_throttled(
    api: httpx.AsyncClient, carol: Caller, sink: Sink
) -> None:
    added = await _add(api, carol, "code@example.net")
    _, code = _proof(sink, "code@example.net")
    url = f"{MAILBOXES}/{added['id']}/verify"
    wrong = "000000" if code != "000000" else "111111"
    for _ in range(4):
        answer = await api.post(url, json={"code": wrong}, headers=carol.headers)
        assert answer.status_code == 422
        assert answer.json()["details"]["field"] == "code"
    right = await api.post(url, json={"code": code}, headers=carol.headers)
    assert right.status_code == 200 and right.json()["verified"] is True
    throttled = await api.post(url, json={"code": code}, headers=carol.headers)
    assert throttled.status_code == 429


async def test_another_users_code_route_is_not_found(
    api: httpx.AsyncClient, carol: Caller, bob: Caller, sink: Sink
) -> None:
    added = await _add(api, carol, "mine@example.net")
    _, code = _proof(sink, "mine@example.net")
    answer = await api.post(
        f"{MAILBOXES}/{added['id']}/verify", json={"code": code}, headers=bob.headers
    )
    assert answer.status_code == 404
    for change in ({"paused": False}, {"default": True}):
        patched = await api.patch(f"{MAILBOXES}/{added['id']}", json=change, headers=bob.headers)
        assert patched.status_code == 404
    listed = (await api.get(MAILBOXES, headers=carol.headers)).json()
    assert listed[1]["verified"] is False


@pytest.mark.parametrize(
    "email", ["carol@example.com", "CAROL@EXAMPLE.COM", "x@relay.test", "x@sub.relay.test", "nope"]
)
async def test_refused_mailboxes_are_422(
    api: httpx.AsyncClient, carol: Caller, sink: Sink, email: str
) -> None:
    answer = await api.post(MAILBOXES, json={"email": email}, headers=carol.headers)
    assert answer.status_code == 422, answer.text
    assert len((await api.get(MAILBOXES, headers=carol.headers)).json()) == 1
    assert sink.messages == []


async def test_mailboxes_at_the_relays_older_domains_are_422(
    api: httpx.AsyncClient, carol: Caller, sink: Sink, clean: AsyncEngine
) -> None:
    # An address made before MASKMAIL_DOMAIN changed: the relay still receives there.
    async with transaction(clean) as conn:
        await create_address(conn, carol.user_id, domain="old-relay.example.net", length=8)
    for ours in ("x@old-relay.example.net", "x@Sub.OLD-relay.example.net"):
        answer = await api.post(MAILBOXES, json={"email": ours}, headers=carol.headers)
        assert answer.status_code == 422, ours
        assert answer.json()["details"]["field"] == "email"
    assert sink.messages == []
    # A domain that only ends like it is someone else's.
    await _add(api, carol, "x@bold-relay.example.net")
    assert len((await api.get(MAILBOXES, headers=carol.headers)).json()) == 2


@pytest.mark.slow
async def test_the_verification_goes_to_the_outbox_without_a_smarthost(
    reconfigured: ClientFactory, carol: Caller, tmp_path: Path
) -> None:
    async with reconfigured(data_dir=tmp_path) as api:
        await _add(api, carol, "boxed@example.net")
    [message] = list(mailbox.Maildir(tmp_path / "outbox", create=False))
    assert message["Delivered-To"] == "boxed@example.net"
    assert message["Return-Path"] == "<>"
    assert re.search(r"code: \d{6}", str(message.get_payload())) is not None


async def test_the_verification_is_signed_as_forwards_are(
    reconfigured: ClientFactory, carol: Caller, tmp_path: Path
) -> None:
    private, public = generate_key()
    (tmp_path / "dkim.key").write_bytes(private)
    async with reconfigured(data_dir=tmp_path) as api:
        await _add(api, carol, "signed@example.net")
    [name] = os.listdir(tmp_path / "outbox" / "new")
    delivered = (tmp_path / "outbox" / "new" / name).read_bytes()
    # The envelope lines the outbox put on top are not part of what was signed.
    signed = delivered[delivered.index(b"DKIM-Signature:") :]
    assert f"d={DOMAIN};".encode() in signed
    assert dkim.verify(signed, dnsfunc=lambda name, timeout=5: txt_value(public).encode())


async def test_the_link_is_the_one_the_owner_sees_through_the_proxy(
    api: httpx.AsyncClient, carol: Caller, sink: Sink
) -> None:
    forwarded = {
        "X-Forwarded-Proto": "https",
        "X-Forwarded-Host": "relay.example",
        "X-Forwarded-Prefix": "/mm",
    }
    answer = await api.post(
        MAILBOXES, json={"email": "proxied@example.net"}, headers={**carol.headers, **forwarded}
    )
    assert answer.status_code == 200
    token, _ = _proof(sink, "proxied@example.net")
    text = email.message_from_bytes(sink.messages[-1].data).get_payload(decode=True)
    assert f"https://relay.example/mm{MAILBOXES}/verify?token={token}".encode() in text


async def test_the_limit_is_403(api: httpx.AsyncClient, carol: Caller) -> None:
    await _add(api, carol, "two@example.net")
    await _add(api, carol, "three@example.net")
    answer = await api.post(MAILBOXES, json={"email": "four@example.net"}, headers=carol.headers)
    assert answer.status_code == 403
    assert answer.json()["code"] == "mailbox_limit_reached"


async def test_a_refused_verification_message_adds_nothing(
    reconfigured: ClientFactory, carol: Caller, sink: Sink
) -> None:
    # Port 1 on loopback: nothing listens, so the smarthost is down and the answer is 503.
    async with reconfigured(smarthost="127.0.0.1:1") as api:
        answer = await api.post(MAILBOXES, json={"email": "x@example.net"}, headers=carol.headers)
        assert answer.status_code == 503
        assert len((await api.get(MAILBOXES, headers=carol.headers)).json()) == 1


async def _verified(api: httpx.AsyncClient, caller: Caller, sink: Sink, email: str) -> int:
    added = await _add(api, caller, email)
    token, _ = _proof(sink, email)
    assert (await api.post(f"{MAILBOXES}/verify", params={"token": token})).status_code == 200
    return int(str(added["id"]))


async def test_default_must_be_verified_and_cannot_be_deleted(
    api: httpx.AsyncClient, carol: Caller, sink: Sink
) -> None:
    [one] = (await api.get(MAILBOXES, headers=carol.headers)).json()
    pending = await _add(api, carol, "pending@example.net")
    refused = await api.patch(
        f"{MAILBOXES}/{pending['id']}", json={"default": True}, headers=carol.headers
    )
    assert refused.status_code == 422
    two = await _verified(api, carol, sink, "two@example.net")
    made = await api.patch(f"{MAILBOXES}/{two}", json={"default": True}, headers=carol.headers)
    assert made.status_code == 200 and made.json()["default"] is True
    listed = (await api.get(MAILBOXES, headers=carol.headers)).json()
    assert [m["default"] for m in listed] == [False, False, True]
    assert (await api.delete(f"{MAILBOXES}/{two}", headers=carol.headers)).status_code == 422
    gone = await api.delete(f"{MAILBOXES}/{one['id']}", headers=carol.headers)
    assert gone.status_code == 204
    assert [m["email"] for m in (await api.get(MAILBOXES, headers=carol.headers)).json()] == [
        "pending@example.net",
        "two@example.net",
    ]


async def test_address_mailboxes_and_a_deleted_mailbox(
    api: httpx.AsyncClient, carol: Caller, bob: Caller, sink: Sink
) -> None:
    [one] = (await api.get(MAILBOXES, headers=carol.headers)).json()
    address = (await api.post(BASE, json={}, headers=carol.headers)).json()
    url = f"{BASE}/{address['id']}/mailboxes"
    assert (await api.get(url, headers=carol.headers)).json() == {"mailbox_ids": [one["id"]]}
    two = await _verified(api, carol, sink, "two@example.net")
    pending = await _add(api, carol, "pending@example.net")
    bobs = (await api.get(MAILBOXES, headers=bob.headers)).json()[0]["id"]
    for bad in ([], [pending["id"]], [bobs], [two, 2**62]):
        answer = await api.put(url, json={"mailbox_ids": bad}, headers=carol.headers)
        assert answer.status_code == 422, bad
    chosen = await api.put(url, json={"mailbox_ids": [two, one["id"]]}, headers=carol.headers)
    assert chosen.status_code == 200
    assert chosen.json() == {"mailbox_ids": sorted([one["id"], two])}
    assert (await api.get(url, headers=bob.headers)).status_code == 404
    only_two = await api.put(url, json={"mailbox_ids": [two]}, headers=carol.headers)
    assert only_two.json() == {"mailbox_ids": [two]}
    assert (await api.delete(f"{MAILBOXES}/{two}", headers=carol.headers)).status_code == 204
    # Forwarded only to the deleted mailbox: now to the default one.
    assert (await api.get(url, headers=carol.headers)).json() == {"mailbox_ids": [one["id"]]}
