"""The header's "Admin" link: admins only (read with the session, so it follows the
operator's change on the next page), marked as current anywhere under /admin. Both
backends."""

from __future__ import annotations

import pytest

from maskmail.services import admin
from tests.web.conftest import Db, SignIn

pytestmark = pytest.mark.anyio


async def test_the_header_shows_admin_to_admins_only(sign_in: SignIn, db: Db) -> None:
    ann = await sign_in("ann@example.com")
    root = await sign_in("root@example.com")
    await db.write(admin.set_admin, "root@example.com", True)
    link = '<a href="/admin">Admin</a>'
    current = '<a href="/admin" aria-current="page">Admin</a>'
    assert "Admin</a>" not in (await ann.client.get("/")).text
    assert link in (await root.client.get("/")).text
    for path in ("/admin", "/admin/invitations", "/admin/audit"):
        page = (await root.client.get(path)).text
        assert current in page, path
        assert 'aria-current="page">Addresses<' not in page
    # Taken back: the next page has no link.
    await db.write(admin.set_admin, "root@example.com", False)
    assert "Admin</a>" not in (await root.client.get("/")).text
