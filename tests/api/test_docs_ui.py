"""/docs is Swagger UI from the copy shipped with maskmail: pinned, hashed, nothing remote."""

from __future__ import annotations

import hashlib
import json
import re

import httpx
import pytest

from maskmail.api.docs import SWAGGER_DIR
from tests.api.conftest import ClientFactory

pytestmark = pytest.mark.anyio

MANIFEST = SWAGGER_DIR / "MANIFEST.json"


def test_every_shipped_file_matches_the_pinned_manifest() -> None:
    manifest = json.loads(MANIFEST.read_text())
    assert manifest["package"] == "swagger-ui-dist"
    assert re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"])
    shipped = {p.name for p in SWAGGER_DIR.iterdir()} - {MANIFEST.name}
    assert shipped == set(manifest["sha256"])
    for name, digest in manifest["sha256"].items():
        assert hashlib.sha256((SWAGGER_DIR / name).read_bytes()).hexdigest() == digest, name


def _references(page: str) -> list[str]:
    return re.findall(r"""(?:src|href|url)\s*[=:]\s*['"]([^'"]+)['"]""", page)


async def test_docs_page_loads_everything_from_this_server(client: httpx.AsyncClient) -> None:
    response = await client.get("/docs")
    assert response.status_code == 200
    page = response.text
    references = _references(page)
    assert len(references) >= 4
    for reference in references:
        assert reference.startswith("/") and not reference.startswith("//"), reference
        assert (await client.get(reference)).status_code == 200, reference
    assert "http://" not in page and "https://" not in page
    bundle = await client.get("/docs/assets/swagger-ui-bundle.js")
    assert bundle.content == (SWAGGER_DIR / "swagger-ui-bundle.js").read_bytes()
    assert (await client.get("/redoc")).status_code == 404


@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
async def test_docs_assets_follow_the_path_prefix(reconfigured: ClientFactory) -> None:
    async with reconfigured(root_path="/maskmail") as client:
        page = (await client.get("/maskmail/docs")).text
    references = _references(page)
    assert references and all(r.startswith("/maskmail/") for r in references), references
