"""The dashboard's forms: a NUL in any field they store or look up is a clear answer
(percent-decoding a form replaces invalid UTF-8, so no lone surrogate arrives)."""

from __future__ import annotations

import pytest
from fastapi import FastAPI

from maskmail.store import addresses as store
from tests.api.conftest import client_for
from tests.web.conftest import PASSWORD, Db, SignIn

pytestmark = pytest.mark.anyio


async def test_a_nul_in_any_form_field_is_refused_and_changes_nothing(
    sign_in: SignIn, db: Db, app: FastAPI
) -> None:
    ann = await sign_in("una@example.com")
    await ann.post("/addresses")
    (made,) = await db.read(store.list_addresses, ann.user_id)
    path = f"/addresses/{made.id}"
    answers = {
        "description": await ann.post(path, {"description": "a\x00b"}),
        "contact": await ann.post(path + "/contacts", {"email": "a\x00b@example.org"}),
        "password": await ann.post(
            "/password", {"current": PASSWORD, "new": "x\x00" * 8, "again": "x\x00" * 8}
        ),
        "search": await ann.client.get("/?q=a%00b"),
    }
    codes = {name: answer.status_code for name, answer in answers.items()}
    assert codes == {"description": 422, "contact": 422, "password": 422, "search": 200}
    (after,) = await db.read(store.list_addresses, ann.user_id)
    assert after.description == "" and after == made
    # The password did not change: the old one still signs in.
    async with client_for(app) as again:
        form = {"email": "una@example.com", "password": PASSWORD}
        assert (await again.post("/sign-in", data=form)).status_code == 303
