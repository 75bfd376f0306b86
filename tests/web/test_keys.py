"""The API keys page: a new key is shown once and works, its use is noted, revoking stops it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi import FastAPI

from maskmail.web.pages.help import EXAMPLE_DOMAIN, EXAMPLE_SERVER
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
        await app.state.key_uses.write()  # noted, and written off the request path
        assert ">never<" not in (await ann.client.get("/keys")).text
        key_id = re.search(r'action="/keys/(\d+)/revoke"', listing)
        assert key_id is not None
        assert (await ann.post(f"/keys/{key_id.group(1)}/revoke")).status_code == 303
        assert (await api.get("/v3/relay/addresses", headers=auth)).status_code == 401
    assert key[:12] not in (await ann.client.get("/keys")).text


@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
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
    source = GUIDE.read_text(encoding="utf-8")
    headings = re.findall(r"^#+ (.+)$", source, re.M)
    assert headings
    for heading in headings:  # every section of docs/help-clients.md, rendered as a heading
        plain = re.sub(r"[`*]", "", heading).replace("&", "&amp;")
        assert re.search(rf"<h\d>{re.escape(plain)}</h\d>", re.sub(r"</?code>", "", guide.text))
    assert "<script" not in _main(guide.text)
    async with client_for(app) as outsider:
        assert (await outsider.get("/help/clients")).status_code in (303, 307)


GUIDE = Path(__file__).parents[2] / "docs" / "help-clients.md"


def _main(html: str) -> str:
    return html.split("</main>")[0].split("<main")[-1]


async def test_the_client_guide_speaks_to_the_person_with_this_relays_values(
    sign_in: SignIn, app: FastAPI
) -> None:
    ann = await sign_in("uma@example.com")
    main = _main((await ann.client.get("/help/clients")).text)
    # The values to paste are this relay's, not the guide's examples.
    assert "<code>http://testserver</code>" in main and "<code>relay.test</code>" in main
    assert EXAMPLE_SERVER not in main and EXAMPLE_DOMAIN not in main
    # The dashboard's own names for what to press, as the keys page shows a new key.
    keys_page = (await ann.post("/keys")).text
    for name in ("API keys", "Create key", "Copy", "Revoke"):
        assert f"<strong>{name}</strong>" in main and f">{name}<" in keys_page
    for client in ("Bitwarden", "Keyguard", "The addy.io browser extension", "SimpleLogin"):
        assert client in main
    # Nothing an operator or a developer would read: no commands, no source paths.
    assert "maskmail " not in main
    assert not re.search(r"\w+/\w+\.(ts|kt|py|vue|js)\b|MASKMAIL_|\bsrc/", main)


async def test_the_guides_screenshots_exist_and_are_served_here(
    sign_in: SignIn, app: FastAPI
) -> None:
    ann = await sign_in("val@example.com")
    main = _main((await ann.client.get("/help/clients")).text)
    images = re.findall(r'<img src="([^"]+)" alt="([^"]*)"', main)
    assert len(images) == len(re.findall(r"!\[", GUIDE.read_text(encoding="utf-8"))) >= 2
    for src, alt in images:
        assert src.startswith("/assets/help/") and "?v=" in src, src
        assert len(alt) > 20  # says what the picture shows
        served = await ann.client.get(src)
        assert served.status_code == 200, src
        assert served.headers["content-type"] == "image/png"
        assert served.content.startswith(b"\x89PNG\r\n\x1a\n")


async def test_a_key_is_made_under_its_trimmed_name_and_listed_by_it(
    sign_in: SignIn, app: FastAPI
) -> None:
    wes = await sign_in("wes@example.com")
    created = await wes.post("/keys", {"name": "  Bitwarden <laptop>  "})
    assert created.status_code == 200 and 'id="new-key">mm_live_' in created.text
    again = await wes.post("/keys", {"name": "Bitwarden <laptop>"})
    assert again.status_code == 200  # two keys may share a name
    listing = (await wes.client.get("/keys")).text
    assert listing.count(">Bitwarden &lt;laptop&gt;</td>") == 2
    assert 'aria-label="Revoke Bitwarden &lt;laptop&gt;"' in listing
    unnamed = await wes.post("/keys", {"name": "   "})
    assert unnamed.status_code == 200 and ">(no name)</td>" in unnamed.text


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("x" * 65, "The key&#39;s name may have at most 64 characters."),
        ("two\nlines", "The key&#39;s name may not contain control characters"),
        ("tab\there", "The key&#39;s name may not contain control characters"),
        ("nul\x00", "The key&#39;s name may not contain the NUL character."),
    ],
)
async def test_a_name_that_breaks_the_rules_makes_no_key(
    sign_in: SignIn, name: str, reason: str
) -> None:
    xia = await sign_in("xia@example.com")
    refused = await xia.post("/keys", {"name": name})
    assert refused.status_code == 422 and reason in refused.text
    assert 'id="new-key"' not in refused.text and "No keys yet." in refused.text


async def test_a_revoked_or_unknown_key_id_is_a_404_page(sign_in: SignIn) -> None:
    yan = await sign_in("yan@example.com")
    await yan.post("/keys", {"name": "once"})
    key_id = re.search(r'action="/keys/(\d+)/revoke"', (await yan.client.get("/keys")).text)
    assert key_id is not None
    assert (await yan.post(f"/keys/{key_id.group(1)}/revoke")).status_code == 303
    for wanted in (key_id.group(1), "99999999", "0", "x"):
        answer = await yan.post(f"/keys/{wanted}/revoke")
        assert answer.status_code == 404 and "There is no such page." in answer.text
