"""The API keys page: a new key is shown once and works, its use is noted, revoking stops it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi import FastAPI

from tests.api.conftest import client_for
from tests.web.conftest import SignIn

pytestmark = pytest.mark.anyio


async def test_create_use_and_revoke_a_key(sign_in: SignIn, app: FastAPI) -> None:
    ann = await sign_in("quinn@example.com")
    created = await ann.post("/keys")
    found = re.search(r'id="new-key">(mm_live_[A-Za-z0-9_\-]+)<', created.text)
    assert created.status_code == 200 and found is not None
    key = found.group(1)
    listing = (await ann.client.get("/keys")).text
    assert key not in listing and f"{key[:12]}…" in listing
    assert 'href="/help/clients"' in listing
    assert "<code>http://testserver</code>" in listing and "<code>relay.test</code>" in listing
    assert ">never<" in listing
    auth = {"Authorization": f"Bearer {key}"}
    async with client_for(app) as api:
        assert (await api.get("/v3/relay/addresses", headers=auth)).status_code == 200
        assert ">never<" not in (await ann.client.get("/keys")).text
        key_id = re.search(r'action="/keys/(\d+)/revoke"', listing)
        assert key_id is not None
        assert (await ann.post(f"/keys/{key_id.group(1)}/revoke")).status_code == 303
        assert (await api.get("/v3/relay/addresses", headers=auth)).status_code == 401
    assert key[:12] not in (await ann.client.get("/keys")).text


async def test_another_users_key_cannot_be_revoked(sign_in: SignIn, app: FastAPI) -> None:
    ann = await sign_in("ray@example.com")
    bob = await sign_in("sue@example.com")
    await ann.post("/keys")
    listing = (await ann.client.get("/keys")).text
    key_id = re.search(r'action="/keys/(\d+)/revoke"', listing)
    assert key_id is not None
    assert (await bob.post(f"/keys/{key_id.group(1)}/revoke")).status_code == 404
    assert key_id.group(0) in (await ann.client.get("/keys")).text


async def test_the_keys_page_links_to_the_client_guide_served_here(
    sign_in: SignIn, app: FastAPI
) -> None:
    ann = await sign_in("tia@example.com")
    assert 'href="/help/clients"' in (await ann.client.get("/keys")).text
    guide = await ann.client.get("/help/clients")
    assert guide.status_code == 200
    assert "frame-ancestors 'none'" in guide.headers["content-security-policy"]
    source = (Path(__file__).parents[2] / "docs" / "clients.md").read_text(encoding="utf-8")
    headings = re.findall(r"^#+ (.+)$", source, re.M)
    assert headings
    for heading in headings:  # every section of docs/clients.md, rendered as a heading
        plain = re.sub(r"[`*]", "", heading).replace("&", "&amp;")
        assert re.search(rf"<h\d>{re.escape(plain)}</h\d>", re.sub(r"</?code>", "", guide.text))
    assert "<script" not in guide.text.split("</main>")[0].split("<main")[-1]
    async with client_for(app) as outsider:
        assert (await outsider.get("/help/clients")).status_code in (303, 307)
