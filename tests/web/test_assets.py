"""Vendored files are the pinned ones, and every page's files come from maskmail itself."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from maskmail.web import assets
from tests.web.conftest import SignIn

pytestmark = pytest.mark.anyio
BROWSER_VENDOR = Path(__file__).parents[1] / "browser" / "vendor"


@pytest.mark.parametrize("folder", [assets.STATIC, BROWSER_VENDOR])
def test_vendored_files_match_their_manifest(folder: Path) -> None:
    manifest = json.loads((folder / "MANIFEST.json").read_text())
    assert manifest
    for name, pin in manifest.items():
        assert re.fullmatch(r"[a-z0-9.\-]+@\d+\.\d+\.\d+", pin["package"])
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == pin["sha256"], name


async def test_pages_load_only_our_own_files(sign_in: SignIn) -> None:
    ann = await sign_in("olga@example.com")
    await ann.post("/addresses")
    await ann.post("/domains", {"domain": "olga.example"})
    paths = ("/", "/mailboxes", "/subdomain", "/domains", "/activity", "/keys", "/password")
    for path in (*paths, "/addresses/1/delete"):
        html = (await ann.client.get(path)).text
        for url in re.findall(r'(?:src|href)="([^"]+)"', html):
            # A fragment ("Skip to content") stays on the page itself.
            ours = url.startswith("/") and not url.startswith("//")
            assert ours or url.startswith("#"), (path, url)
        for url in re.findall(r'<script src="([^"]+)"', html):
            answer = await ann.client.get(url)
            assert answer.status_code == 200 and answer.content, url


def test_every_file_the_pages_load_is_pinned() -> None:
    """Our own files too: after editing one, `python -m maskmail.web.assets` re-pins it."""
    manifest = json.loads(assets.MANIFEST.read_text())
    served = {p.name for p in assets.STATIC.iterdir() if p.is_file() and p.name != "MANIFEST.json"}
    assert served == set(manifest)
    own = {name for name, pin in manifest.items() if pin["package"].startswith(assets.OWN)}
    assert {"style.css", "app.js", "logo.svg"} <= own


async def test_favicon_is_the_logo(sign_in: SignIn) -> None:
    ann = await sign_in("fay@example.com")
    icon = await ann.client.get("/favicon.ico")
    assert icon.status_code == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")
    assert icon.content == (assets.STATIC / assets.LOGO).read_bytes()
    page = (await ann.client.get("/")).text
    assert 'rel="icon"' in page and "/assets/logo.svg?v=" in page
