"""The mailboxes page and an address's mailboxes: the API's store functions and rules,
the verification message caught in the Maildir outbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from maskmail.config import Settings
from maskmail.store import addresses, mailboxes
from tests.api.conftest import make_settings
from tests.support import free_port
from tests.web.conftest import Db, Person, SignIn, verification_code

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return make_settings(
        database_url, data_dir=tmp_path, max_mailboxes_per_user=3, domain="relay.example.com"
    )


async def _listed(db: Db, person: Person) -> dict[str, mailboxes.Mailbox]:
    return {m.email: m for m in await db.read(mailboxes.list_mailboxes, person.user_id)}


async def test_add_verify_default_and_delete(sign_in: SignIn, db: Db, settings: Settings) -> None:
    ann = await sign_in("mia@example.com")
    added = await ann.post("/mailboxes", {"email": "mia.work@example.net"})
    assert added.status_code == 200 and "6-digit code went to mia.work@example.net" in added.text
    work = (await _listed(db, ann))["mia.work@example.net"]
    assert (work.verified, work.default) == (False, False)
    assert "Not verified" in added.text and f'id="code-{work.id}"' in added.text
    # A mailbox that is not verified cannot be the default yet.
    early = await ann.post(f"/mailboxes/{work.id}/default")
    assert early.status_code == 422 and "only a verified mailbox" in early.text.lower()
    wrong = await ann.post(f"/mailboxes/{work.id}/verify", {"code": "000000x"})
    assert wrong.status_code == 422 and "Wrong or expired code." in wrong.text
    assert not (await _listed(db, ann))["mia.work@example.net"].verified
    code = verification_code(settings.outbox_dir, "mia.work@example.net")
    right = await ann.post(f"/mailboxes/{work.id}/verify", {"code": code})
    assert right.status_code == 200 and "mia.work@example.net is verified." in right.text
    assert (await ann.post(f"/mailboxes/{work.id}/default")).status_code == 303
    listed = await _listed(db, ann)
    assert listed["mia.work@example.net"].default and not listed["mia@example.com"].default
    # The default cannot be deleted; the other one can, after asking.
    refused = await ann.post(f"/mailboxes/{work.id}/delete")
    assert refused.status_code == 422 and "default mailbox cannot be deleted" in refused.text
    one = listed["mia@example.com"].id
    asked = await ann.client.get(f"/mailboxes/{one}/delete")
    assert asked.status_code == 200 and "forward to your default" in asked.text
    assert len(await _listed(db, ann)) == 2
    assert (await ann.post(f"/mailboxes/{one}/delete")).status_code == 303
    assert list(await _listed(db, ann)) == ["mia.work@example.net"]


async def test_refused_adds_change_nothing(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("ned@example.com")
    ours = await ann.post("/mailboxes", {"email": "x@sub.relay.example.com"})
    again = await ann.post("/mailboxes", {"email": "NED@example.com"})
    bad = await ann.post("/mailboxes", {"email": "not an address"})
    assert [r.status_code for r in (ours, again, bad)] == [422, 422, 422]
    assert "own domain." in ours.text and "have this mailbox already." in again.text
    assert "must have an @-sign." in bad.text
    for n in (1, 2):
        assert (await ann.post("/mailboxes", {"email": f"n{n}@example.net"})).status_code == 200
    over = await ann.post("/mailboxes", {"email": "n3@example.net"})
    assert over.status_code == 403 and "at most 3 mailboxes" in over.text
    assert len(await _listed(db, ann)) == 3


async def test_an_unreachable_smarthost_adds_no_mailbox(
    sign_in: SignIn, db: Db, database_url: str, tmp_path: Path
) -> None:
    from tests.api.conftest import client_for, started_app

    settings = make_settings(database_url, smarthost=f"127.0.0.1:{free_port()}")
    ann = await sign_in("ola@example.com")
    async with started_app(settings) as app, client_for(app) as client:
        client.cookies = ann.client.cookies
        answer = await client.post(
            "/mailboxes",
            data={"csrf": await ann.csrf(), "email": "ola.two@example.net"},
            headers={"Origin": "http://testserver"},
        )
    assert answer.status_code == 503 and 'role="alert"' in answer.text
    assert list(await _listed(db, ann)) == ["ola@example.com"]


async def test_wrong_codes_are_throttled(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("pia@example.com")
    await ann.post("/mailboxes", {"email": "pia2@example.net"})
    target = (await _listed(db, ann))["pia2@example.net"].id
    codes = [
        (await ann.post(f"/mailboxes/{target}/verify", {"code": "123456"})).status_code
        for _ in range(6)
    ]
    assert codes[:5] == [422] * 5 and codes[5] == 429


async def test_an_address_chooses_its_verified_mailboxes(
    sign_in: SignIn, db: Db, settings: Settings
) -> None:
    ann = await sign_in("quin@example.com")
    bob = await sign_in("rob@example.com")
    await ann.post("/addresses")
    (made,) = await db.read(addresses.list_addresses, ann.user_id)
    await ann.post("/mailboxes", {"email": "quin2@example.net"})
    await ann.post("/mailboxes", {"email": "quin3@example.net"})
    listed = await _listed(db, ann)
    two, three = listed["quin2@example.net"].id, listed["quin3@example.net"].id
    code = verification_code(settings.outbox_dir, "quin2@example.net")
    await ann.post(f"/mailboxes/{two}/verify", {"code": code})
    page = (await ann.client.get(f"/addresses/{made.id}")).text
    # Verified mailboxes are offered, the default ticked; the unverified one is not offered.
    one = listed["quin@example.com"].id
    assert f'value="{one}" checked' in page and f'value="{two}">' in page
    assert f'value="{three}"' not in page
    path = f"/addresses/{made.id}/mailboxes"
    client = ann.client
    saved = await client.post(
        path,
        data={"csrf": await ann.csrf(), "mailbox": [str(one), str(two)]},
        headers={"Origin": "http://testserver"},
    )
    assert saved.status_code == 200 and "Mailboxes saved." in saved.text
    ids = await db.read(mailboxes.address_mailbox_ids, ann.user_id, made.id)
    assert ids == sorted([one, two])
    bobs = (await _listed(db, bob))["rob@example.com"].id
    for chosen in ([], [str(three)], [str(bobs)], ["x"]):
        answer = await client.post(
            path,
            data={"csrf": await ann.csrf(), "mailbox": chosen},
            headers={"Origin": "http://testserver"},
        )
        assert answer.status_code == 422 and 'role="alert"' in answer.text, chosen
    assert await db.read(mailboxes.address_mailbox_ids, ann.user_id, made.id) == ids
    # Another user's address, and another user's mailbox in the path, are 404s.
    assert (await bob.post(path, {"mailbox": str(bobs)})).status_code == 404
    for action in ("verify", "default", "delete"):
        assert (await bob.post(f"/mailboxes/{three}/{action}", {"code": "1"})).status_code == 404
    assert (await bob.client.get(f"/mailboxes/{three}/delete")).status_code == 404
    assert three in {m.id for m in (await _listed(db, ann)).values()}
