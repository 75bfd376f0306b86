"""/v3/relay/mailboxes/{id}/pgp: a mailbox's OpenPGP key, checked in process, on both
backends."""

from __future__ import annotations

import time

import httpx
import pytest

from maskmail.services import mailbox_keys as key_service
from tests.api.conftest import Caller, ClientFactory, UserFactory
from tests.pgp_keys import NEEDS_GPG, hung, keys

pytestmark = [pytest.mark.anyio, NEEDS_GPG]

MAILBOXES = "/v3/relay/mailboxes"


@pytest.fixture
async def carol(make_user: UserFactory) -> Caller:
    return await make_user("carol@example.com")


async def _mailbox_one(client: httpx.AsyncClient, caller: Caller) -> int:
    [one] = (await client.get(MAILBOXES, headers=caller.headers)).json()
    return int(one["id"])


async def test_a_key_is_set_shown_changed_and_removed(
    client: httpx.AsyncClient, carol: Caller
) -> None:
    url = f"{MAILBOXES}/{await _mailbox_one(client, carol)}/pgp"
    assert (await client.get(url, headers=carol.headers)).status_code == 404
    put = await client.put(url, json={"public_key": keys().good}, headers=carol.headers)
    assert put.status_code == 200, put.text
    body = put.json()
    assert body["fingerprint"] == keys().good_fingerprint
    assert body["encrypt_subject"] is False
    assert body["expires_time"] > body["created_time"]
    assert (await client.get(url, headers=carol.headers)).json() == body
    patched = await client.patch(url, json={"encrypt_subject": True}, headers=carol.headers)
    assert patched.status_code == 200, patched.text
    assert patched.json()["encrypt_subject"] is True
    # A new key keeps the choice unless the body says otherwise.
    again = await client.put(url, json={"public_key": keys().good}, headers=carol.headers)
    assert again.json()["encrypt_subject"] is True
    # The mailbox object itself stays as it was (issue 15's shape).
    [one] = (await client.get(MAILBOXES, headers=carol.headers)).json()
    assert set(one) == {"id", "email", "verified", "default", "created_time"}
    assert (await client.delete(url, headers=carol.headers)).status_code == 204
    assert (await client.get(url, headers=carol.headers)).status_code == 404
    assert (await client.delete(url, headers=carol.headers)).status_code == 404
    assert (
        await client.patch(url, json={"encrypt_subject": True}, headers=carol.headers)
    ).status_code == 404


@pytest.mark.parametrize(
    ("which", "reason"),
    [
        ("sign_only", "cannot_encrypt"),
        ("expired", "expired"),
        ("revoked", "revoked"),
        ("subkey_expired", "cannot_encrypt"),
        ("secret", "unparseable"),
        ("secret_as_public", "unparseable"),
        ("garbage", "unparseable"),
        ("truncated", "unparseable"),
        ("two", "several_keys"),
    ],
)
async def test_unusable_keys_are_422_with_the_reason_and_change_nothing(
    client: httpx.AsyncClient, carol: Caller, which: str, reason: str
) -> None:
    url = f"{MAILBOXES}/{await _mailbox_one(client, carol)}/pgp"
    await client.put(url, json={"public_key": keys().good}, headers=carol.headers)
    before = (await client.get(url, headers=carol.headers)).json()
    text = {
        "garbage": "not a key",
        "truncated": keys().good[:300] + "\n-----END PGP PUBLIC KEY BLOCK-----\n",
        "two": keys().good + keys().sign_only,
        "secret_as_public": keys().secret.replace("PRIVATE KEY", "PUBLIC KEY"),
    }.get(which) or getattr(keys(), which)
    answer = await client.put(url, json={"public_key": text}, headers=carol.headers)
    assert answer.status_code == 422, answer.text
    error = answer.json()
    assert error["details"]["reason"] == reason
    assert error["details"]["field"] == "public_key"
    assert error["message"]
    assert (await client.get(url, headers=carol.headers)).json() == before


async def test_another_users_mailbox_is_not_found(
    client: httpx.AsyncClient, carol: Caller, bob: Caller
) -> None:
    url = f"{MAILBOXES}/{await _mailbox_one(client, carol)}/pgp"
    answer = await client.put(url, json={"public_key": keys().good}, headers=bob.headers)
    assert answer.status_code == 404
    assert (await client.get(url, headers=carol.headers)).status_code == 404
    await client.put(url, json={"public_key": keys().good}, headers=carol.headers)
    for method in ("GET", "DELETE"):
        assert (await client.request(method, url, headers=bob.headers)).status_code == 404
    assert (await client.get(url, headers=carol.headers)).status_code == 200


async def test_bad_bodies_are_422(client: httpx.AsyncClient, carol: Caller) -> None:
    url = f"{MAILBOXES}/{await _mailbox_one(client, carol)}/pgp"
    for body in ({}, {"public_key": 5}, {"public_key": keys().good, "extra": 1}):
        answer = await client.put(url, json=body, headers=carol.headers)
        assert answer.status_code == 422, body
    # Longer than any key taken: the body limit answers first.
    too_long = {"public_key": "x" * 70_000}
    assert (await client.put(url, json=too_long, headers=carol.headers)).status_code == 413
    assert (await client.get(url, headers=carol.headers)).status_code == 404


async def test_a_check_that_hangs_is_503_within_the_timeout_and_changes_nothing(
    reconfigured: ClientFactory, carol: Caller, monkeypatch: pytest.MonkeyPatch
) -> None:
    with hung() as (work, entered):
        monkeypatch.setattr(key_service, "check_key", work)
        async with reconfigured(pgp_timeout=0.5) as client:
            url = f"{MAILBOXES}/{await _mailbox_one(client, carol)}/pgp"
            started = time.monotonic()
            answer = await client.put(url, json={"public_key": keys().good}, headers=carol.headers)
            waited = time.monotonic() - started
            assert entered.is_set()
            assert answer.status_code == 503, answer.text
            assert answer.json()["code"] == "unavailable"
            assert answer.json()["message"] == "the key could not be checked in time; try again"
            assert answer.headers["Retry-After"] == "60"
            assert 0.5 <= waited < 30
            assert (await client.get(url, headers=carol.headers)).status_code == 404
