"""The admin page's "Send it to": the invitation's link mailed through the outbound path
(caught in the Maildir outbox), one plain-text part, working once; a refused address
makes nothing; the audit row says it was mailed and never names the address. Both
backends."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from maskmail.config import Settings
from maskmail.core.invitations import InvitationInvalid
from maskmail.services import admin
from maskmail.services import invitations as invitation_flow
from maskmail.store import audit_log, invitations
from tests.api.conftest import DOMAIN, make_settings
from tests.web.conftest import Db, Person, SignIn
from tests.web.test_password_reset import mails_to

pytestmark = pytest.mark.anyio
_LINK = re.compile(r"http://testserver/sign-up\?invite=(mmi_[\w-]+)")


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return make_settings(database_url, data_dir=tmp_path, signup="invite")


async def _admin(sign_in: SignIn, db: Db) -> Person:
    person = await sign_in("root@example.com")
    await db.write(admin.set_admin, "root@example.com", True)
    return person


async def test_the_link_is_mailed_shown_once_and_works_once(
    sign_in: SignIn, db: Db, settings: Settings
) -> None:
    root = await _admin(sign_in, db)
    made = await root.post("/admin/invitations", {"expires": "2d", "email": "Friend@Example.org"})
    assert made.status_code == 200 and 'id="invitation-mailed"' in made.text
    shown = _LINK.search(made.text)
    assert shown is not None
    (text,) = mails_to(settings.outbox_dir, "Friend@example.org")
    mailed = _LINK.search(text)
    assert mailed is not None and mailed.group(1) == shown.group(1)
    # The page keeps neither the link nor the address.
    listing = (await root.client.get("/admin/invitations")).text
    assert shown.group(1) not in listing and "friend@example.org" not in listing.lower()
    (entry, _) = await db.read(lambda conn: audit_log.newest(conn, offset=0, limit=10))
    assert entry.action == "invite" and entry.detail.endswith(", mailed")
    assert "example.org" not in repr(entry).lower() and shown.group(1) not in repr(entry)
    # The mailed link opens the sign-up form, and is spent once.
    opened = await root.client.get(f"/sign-up?invite={mailed.group(1)}")
    assert opened.status_code == 200 and mailed.group(1) in opened.text
    await db.write(invitation_flow.redeem, mailed.group(1))
    with pytest.raises(InvitationInvalid):
        await db.write(invitation_flow.redeem, mailed.group(1))


@pytest.mark.parametrize(
    "email", [f"me@{DOMAIN}", f"me@sub.{DOMAIN}", "not an address", "me@@example.org"]
)
async def test_a_refused_address_makes_no_invitation(
    sign_in: SignIn, db: Db, settings: Settings, email: str
) -> None:
    root = await _admin(sign_in, db)
    refused = await root.post("/admin/invitations", {"expires": "2d", "email": email})
    assert refused.status_code == 422 and 'role="alert"' in refused.text
    assert "No invitations yet." in refused.text and 'id="new-invitation"' not in refused.text
    assert await db.read(invitations.list_invitations) == []
    assert [e.action for e in await db.read(lambda c: audit_log.newest(c, offset=0, limit=9))] == [
        "make admin"
    ]
    assert not settings.outbox_dir.exists() or not any(settings.outbox_dir.rglob("*,*"))


async def test_without_an_address_nothing_is_mailed(
    sign_in: SignIn, db: Db, settings: Settings
) -> None:
    root = await _admin(sign_in, db)
    made = await root.post("/admin/invitations", {"expires": "2d", "email": ""})
    assert made.status_code == 200 and _LINK.search(made.text) is not None
    assert 'id="invitation-mailed"' not in made.text
    assert mails_to(settings.outbox_dir, "friend@example.org") == []
