"""A mailbox's OpenPGP key on the mailboxes page (issue 16 item 8): set, refuse with
the reason, encrypt the subject, remove; each effect read back through the API."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from maskmail import openpgp
from maskmail.core import keys as api_keys
from maskmail.services import mailbox_keys as key_service
from maskmail.store import accounts, mailboxes
from tests.pgp_keys import NEEDS_GPG, hung, keys
from tests.web.conftest import Db, Person, SignIn

pytestmark = [pytest.mark.anyio, NEEDS_GPG]


async def _setup(db: Db, person: Person) -> tuple[int, dict[str, str]]:
    """The person's one mailbox, and an API key to read its key with."""
    [mine] = await db.read(mailboxes.list_mailboxes, person.user_id)
    token = api_keys.generate_key()
    await db.write(accounts.add_key, person.user_id, api_keys.hash_key(token))
    return mine.id, {"Authorization": f"Bearer {token}"}


async def _api_key(person: Person, mailbox_id: int, auth: dict[str, str]) -> httpx.Response:
    return await person.client.get(f"/v3/relay/mailboxes/{mailbox_id}/pgp", headers=auth)


async def test_set_subject_and_remove(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("ann@example.com")
    mailbox_id, auth = await _setup(db, ann)
    path = f"/mailboxes/{mailbox_id}/pgp"
    assert "No key: forwards arrive unencrypted." in (await ann.client.get("/mailboxes")).text
    # Without the form's token nothing is stored.
    forged = await ann.client.post(path, data={"public_key": keys().good, "csrf": "0" * 64})
    assert forged.status_code == 403
    assert (await _api_key(ann, mailbox_id, auth)).status_code == 404
    assert (await ann.post(path, {"public_key": keys().good})).status_code == 303
    stored = (await _api_key(ann, mailbox_id, auth)).json()
    assert stored["fingerprint"] == keys().good_fingerprint
    assert stored["encrypt_subject"] is False
    shown = (await ann.client.get("/mailboxes")).text
    assert keys().good_fingerprint in shown and "Replace key" in shown
    on = await ann.post(path + "/subject", {"encrypt_subject": "true"})
    assert on.status_code == 303
    assert (await _api_key(ann, mailbox_id, auth)).json()["encrypt_subject"] is True
    assert (await ann.post(path + "/delete")).status_code == 303
    assert (await _api_key(ann, mailbox_id, auth)).status_code == 404
    # Nothing left to remove or switch: as in the API, nothing of the viewer's there.
    assert (await ann.post(path + "/delete")).status_code == 404
    assert (await ann.post(path + "/subject", {"encrypt_subject": "true"})).status_code == 404


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not a key", "The key must be one ASCII-armored OpenPGP public key block."),
        ("sign_only", "The key has no usable encryption (sub)key."),
        ("expired", "The key has expired."),
        ("subkey_expired", "The key has no usable encryption (sub)key."),
        ("secret", "The key must be one ASCII-armored OpenPGP public key block."),
        ("two", "Give one key, not several."),
        ("a\x00b", "The key may not contain the NUL character."),
    ],
)
async def test_unusable_keys_show_the_reason_and_keep_the_old(
    sign_in: SignIn, db: Db, text: str, message: str
) -> None:
    ann = await sign_in("ann@example.com")
    mailbox_id, auth = await _setup(db, ann)
    path = f"/mailboxes/{mailbox_id}/pgp"
    assert (await ann.post(path, {"public_key": keys().good})).status_code == 303
    before = (await _api_key(ann, mailbox_id, auth)).json()
    named = keys().good + keys().sign_only if text == "two" else getattr(keys(), text, text)
    refused = await ann.post(path, {"public_key": named})
    assert refused.status_code == 422
    assert message in refused.text
    assert (await _api_key(ann, mailbox_id, auth)).json() == before


async def test_a_body_past_the_limit_is_refused_as_by_the_api(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("ann@example.com")
    mailbox_id, auth = await _setup(db, ann)
    huge = keys().good + "x" * openpgp.MAX_KEY_CHARS
    too_large = await ann.post(f"/mailboxes/{mailbox_id}/pgp", {"public_key": huge})
    assert too_large.status_code == 413
    assert (await _api_key(ann, mailbox_id, auth)).status_code == 404


async def test_a_check_that_hangs_shows_the_api_message(
    sign_in: SignIn, db: Db, app: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = app.state.settings
    monkeypatch.setattr(app.state, "settings", settings.model_copy(update={"pgp_timeout": 0.5}))
    ann = await sign_in("ann@example.com")
    mailbox_id, auth = await _setup(db, ann)
    with hung() as (work, entered):
        monkeypatch.setattr(key_service, "check_key", work)
        refused = await ann.post(f"/mailboxes/{mailbox_id}/pgp", {"public_key": keys().good})
    assert entered.is_set()
    assert refused.status_code == 503 and "could not be checked in time" in refused.text
    assert (await _api_key(ann, mailbox_id, auth)).status_code == 404


async def test_only_verified_mailboxes_of_ones_own(sign_in: SignIn, db: Db) -> None:
    ann, bob = await sign_in("ann@example.com"), await sign_in("bob@example.com")
    mailbox_id, auth = await _setup(db, ann)
    assert (await ann.post("/mailboxes", {"email": "ann.new@example.net"})).status_code == 200
    listed = {m.email: m.id for m in await db.read(mailboxes.list_mailboxes, ann.user_id)}
    shown = (await ann.client.get("/mailboxes")).text
    assert f'id="public-key-{mailbox_id}"' in shown
    assert f'id="public-key-{listed["ann.new@example.net"]}"' not in shown
    stolen = await bob.post(f"/mailboxes/{mailbox_id}/pgp", {"public_key": keys().good})
    assert stolen.status_code == 404
    assert (await _api_key(ann, mailbox_id, auth)).status_code == 404
