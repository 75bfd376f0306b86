"""The dashboard's side of verification limits: re-adding one address mails it at most
the per-address limit, the per-user limit counts every address, wrong codes follow the
address across delete and re-add, and the mailed link's page verifies only by its button."""

from __future__ import annotations

import mailbox
import re
from pathlib import Path

import pytest

from maskmail.config import Settings
from maskmail.store import mailboxes
from tests.api.conftest import make_settings
from tests.web.conftest import Db, Person, SignIn, verification_code

pytestmark = pytest.mark.anyio

STRANGER = "stranger@example.net"


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return make_settings(
        database_url,
        data_dir=tmp_path,
        domain="relay.example.com",
        max_mailboxes_per_user=3,
        mailbox_verify_per_user=5,
    )


def _mails_to(outbox: Path, recipient: str) -> list[bytes]:
    """The decoded text of each verification message to ``recipient``."""
    found = [m for m in mailbox.Maildir(outbox, create=False) if m["To"] == recipient]
    texts = [m.get_payload(decode=True) for m in found]
    assert all(isinstance(t, bytes) for t in texts)
    return [bytes(t) for t in texts]


async def _mine(db: Db, person: Person, email: str) -> mailboxes.Mailbox | None:
    listed = await db.read(mailboxes.list_mailboxes, person.user_id)
    return next((m for m in listed if m.email == email), None)


async def _add_and_delete(db: Db, person: Person, email: str) -> int:
    answer = await person.post("/mailboxes", {"email": email})
    added = await _mine(db, person, email)
    if added is not None:
        assert (await person.post(f"/mailboxes/{added.id}/delete")).status_code == 303
    return answer.status_code


async def test_readding_one_address_mails_it_at_most_three_times(
    sign_in: SignIn, db: Db, settings: Settings
) -> None:
    ann = await sign_in("ann@example.com")
    statuses = [await _add_and_delete(db, ann, STRANGER) for _ in range(15)]
    assert statuses == [200] * 3 + [429] * 12
    refused = await ann.post("/mailboxes", {"email": STRANGER})
    assert refused.status_code == 429
    assert re.search(r"This mailbox was sent 3 .* try again in 24 hours", refused.text)
    assert len(_mails_to(settings.outbox_dir, STRANGER)) == 3
    assert await _mine(db, ann, STRANGER) is None


async def test_the_per_user_limit_counts_every_address(
    sign_in: SignIn, db: Db, settings: Settings
) -> None:
    ann = await sign_in("ann@example.com")
    statuses = [await _add_and_delete(db, ann, f"n{n}@example.net") for n in range(7)]
    assert statuses == [200] * 5 + [429] * 2
    refused = await ann.post("/mailboxes", {"email": "n9@example.net"})
    assert refused.status_code == 429 and "This account sent 5" in refused.text
    assert not _mails_to(settings.outbox_dir, "n9@example.net")


async def test_wrong_codes_follow_the_address_across_delete_and_readd(
    sign_in: SignIn, db: Db, settings: Settings
) -> None:
    ann = await sign_in("ann@example.com")
    added: mailboxes.Mailbox | None = None
    for tries in (3, 2):
        assert (await ann.post("/mailboxes", {"email": STRANGER})).status_code == 200
        added = await _mine(db, ann, STRANGER)
        assert added is not None
        code = verification_code(settings.outbox_dir, STRANGER)
        wrong = "000000" if code != "000000" else "111111"
        for _ in range(tries):
            answer = await ann.post(f"/mailboxes/{added.id}/verify", {"code": wrong})
            assert answer.status_code == 422
        if tries == 3:
            assert (await ann.post(f"/mailboxes/{added.id}/delete")).status_code == 303
    assert added is not None
    spent = await ann.post(f"/mailboxes/{added.id}/verify", {"code": code})
    assert spent.status_code == 429
    # The rest of the limiter's hour-long window, rounded up: "a minute" when the tries
    # fell in its last minute (a run across a full hour of the clock failed on that).
    assert re.search(
        r"Five codes were tried for this mailbox .* try again in (a minute|\d+ minutes|an hour)",
        spent.text,
    )
    still = await _mine(db, ann, STRANGER)
    assert still is not None and not still.verified


async def test_the_mailed_link_verifies_only_by_its_button(
    sign_in: SignIn, db: Db, settings: Settings
) -> None:
    ann = await sign_in("ann@example.com")
    assert (await ann.post("/mailboxes", {"email": STRANGER})).status_code == 200
    [sent] = _mails_to(settings.outbox_dir, STRANGER)
    found = re.search(rb"(/v3/relay/mailboxes/verify)\?token=([A-Za-z0-9_-]+)", sent)
    assert found is not None
    path, token = found.group(1).decode(), found.group(2).decode()
    # A link scanner's GET, signed in or not, shows the button and changes nothing.
    for client in (ann.client, ann.client):
        page = await client.get(path, params={"token": token})
        assert page.status_code == 200 and "<button" in page.text
    added = await _mine(db, ann, STRANGER)
    assert added is not None and not added.verified
    pressed = await ann.client.post(path, params={"token": token})
    assert pressed.status_code == 200
    added = await _mine(db, ann, STRANGER)
    assert added is not None and added.verified
