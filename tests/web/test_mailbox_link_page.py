"""The page a mailbox's verification link opens is a page of the dashboard's layout (its
stylesheet, its CSP), shown to no one signed in, and keeps the token to itself."""

from __future__ import annotations

import pytest
from fastapi import FastAPI

from tests.api.conftest import client_for

pytestmark = pytest.mark.anyio


async def test_the_link_page_extends_the_dashboards_layout(app: FastAPI) -> None:
    async with client_for(app) as client:
        answer = await client.get("/v3/relay/mailboxes/verify", params={"token": "t" * 43})
    assert answer.status_code == 200
    assert "<title>Verify a mailbox · maskmail</title>" in answer.text
    assert 'rel="stylesheet" href="/assets/' in answer.text
    assert '<main id="main"' in answer.text and "<nav" not in answer.text
    assert f'action="verify?token={"t" * 43}"' in answer.text
    assert answer.headers["content-security-policy"].startswith("default-src 'none'")
    assert answer.headers["referrer-policy"] == "no-referrer"
    assert answer.headers["x-robots-tag"] == "noindex"
    assert answer.headers["cache-control"] == "no-store"
