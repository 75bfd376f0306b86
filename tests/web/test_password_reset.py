"""Password reset by mail through the dashboard: asked for on the sign-in page, answered
alike for every email, the link caught in the Maildir outbox, used once; on both
backends."""

from __future__ import annotations

import mailbox
import re
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from maskmail.config import Settings
from maskmail.services import account_mail
from maskmail.store import clock, password_resets
from tests.api.conftest import client_for, make_settings
from tests.web.conftest import PASSWORD, Db, SignIn, add_person

pytestmark = pytest.mark.anyio
NEW = "a fresh new password"
_LINK = re.compile(r"(http://testserver/reset-password\?token=[\w-]+)")


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return make_settings(database_url, data_dir=tmp_path, password_reset_rate_limit="3/hour")


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(app) as c:
        yield c


def mails_to(outbox: Path, recipient: str) -> list[str]:
    """The plain-text bodies of the messages sent to ``recipient``, oldest first."""
    if not outbox.exists():
        return []
    found = []
    for message in sorted(mailbox.Maildir(outbox, create=False), key=lambda m: m["Date"]):
        if message["To"] == recipient:
            assert message.get_content_type() == "text/plain"
            payload = message.get_payload(decode=True)
            assert isinstance(payload, bytes)
            found.append(payload.decode())
    return found


def link_in(text: str) -> str:
    found = _LINK.search(text)
    assert found is not None, text
    return found.group(1)


async def ask(client: httpx.AsyncClient, email: str, **headers: str) -> httpx.Response:
    return await client.post(
        "/forgot-password",
        data={"email": email},
        headers={"Origin": "http://testserver", **headers},
    )


async def test_forgot_reset_and_sign_in_again(
    sign_in: SignIn, client: httpx.AsyncClient, settings: Settings
) -> None:
    signin_page = await client.get("/")
    assert 'href="/forgot-password"' in signin_page.text
    form = await client.get("/forgot-password")
    assert form.status_code == 200 and 'action="/forgot-password"' in form.text
    ann = await sign_in("ann@example.com")
    known = await ask(client, "Ann@Example.com")
    unknown = await ask(client, "nobody@example.com")
    # The same page and status, whoever has the email.
    assert known.status_code == unknown.status_code == 200
    assert known.text == unknown.text and "If an account signs in with that email" in known.text
    await account_mail.settle()
    (text,) = mails_to(settings.outbox_dir, "ann@example.com")
    assert "within an hour" in text
    link = link_in(text)
    shown = await client.get(link)
    assert shown.status_code == 200 and 'name="new"' in shown.text
    token = link.rpartition("=")[2]
    assert f'value="{token}"' in shown.text
    # Opening the link twice used nothing; wrong input leaves it working.
    body = {"token": token, "new": NEW, "again": NEW + "!"}
    headers = {"Origin": "http://testserver"}
    differ = await client.post("/reset-password", data=body, headers=headers)
    assert differ.status_code == 422 and "The two new passwords differ." in differ.text
    body.update(new="short", again="short")
    weak = await client.post("/reset-password", data=body, headers=headers)
    assert weak.status_code == 422 and "at least 10 characters" in weak.text
    body.update(new=NEW, again=NEW)
    done = await client.post("/reset-password", data=body, headers=headers)
    assert done.status_code == 200 and "Your password is set." in done.text
    # Every session of Ann ended; the old password is gone, the new one signs in.
    assert 'action="/sign-in"' in (await ann.client.get("/")).text
    old = await client.post("/sign-in", data={"email": "ann@example.com", "password": PASSWORD})
    assert old.status_code == 401
    new = await client.post("/sign-in", data={"email": "ann@example.com", "password": NEW})
    assert new.status_code == 303
    # The link is burnt.
    again = await client.post("/reset-password", data=body, headers=headers)
    assert again.status_code == 404 and "used, expired or unknown" in again.text
    assert (await client.get(link)).status_code == 404


async def test_an_expired_link_is_dead(
    db: Db, client: httpx.AsyncClient, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    await db.write(add_person, "old@example.com")
    await ask(client, "old@example.com")
    await account_mail.settle()
    link = link_in(mails_to(settings.outbox_dir, "old@example.com")[0])
    token = link.rpartition("=")[2]
    later = clock.now() + 3600
    monkeypatch.setattr(password_resets, "now", lambda: later)
    assert (await client.get(link)).status_code == 404
    body = {"token": token, "new": NEW, "again": NEW}
    late = await client.post("/reset-password", data=body, headers={"Origin": "http://testserver"})
    assert late.status_code == 404 and "Ask for a new one." in late.text
    unknown = await client.get("/reset-password?token=" + "x" * 43)
    assert unknown.status_code == 404 and "used, expired or unknown" in unknown.text


async def test_too_many_requests_per_email_and_per_client(
    db: Db, app: FastAPI, settings: Settings
) -> None:
    await db.write(add_person, "lim@example.com")
    tag = secrets.token_hex(3)
    # Per email, from many clients: the fourth is refused, for an unknown email too.
    for email in ("lim@example.com", f"none{tag}@example.com"):
        codes = []
        for n in range(4):
            async with client_for(app, peer=(f"10.9.{n}.{len(email)}", 1)) as client:
                codes.append((await ask(client, email.upper() if n else email)).status_code)
            # One at a time: two first deliveries to a new Maildir race to make it.
            await account_mail.settle()
        assert codes == [200, 200, 200, 429], email
    await account_mail.settle()
    assert len(mails_to(settings.outbox_dir, "lim@example.com")) == 3
    # Per client behind the trusted proxy: the address it forwards for counts.
    async with client_for(app) as proxy:
        hidden = [
            (await ask(proxy, f"p{n}{tag}@example.com", **{"X-Forwarded-For": "198.51.100.7"}))
            for n in range(4)
        ]
        other = await ask(proxy, f"q{tag}@example.com", **{"X-Forwarded-For": "198.51.100.8"})
    assert [r.status_code for r in hidden] == [200, 200, 200, 429]
    assert "Too many requests" in hidden[-1].text and other.status_code == 200
    # A client that is no proxy does not choose whom it is counted as.
    async with client_for(app, peer=("203.0.113.5", 1)) as stranger:
        spoofed = [
            (await ask(stranger, f"s{n}{tag}@example.com", **{"X-Forwarded-For": f"10.8.0.{n}"}))
            for n in range(4)
        ]
    assert [r.status_code for r in spoofed] == [200, 200, 200, 429]


async def test_refusals_change_nothing(
    db: Db, client: httpx.AsyncClient, settings: Settings
) -> None:
    await db.write(add_person, "kept@example.com")
    cross = await client.post(
        "/forgot-password",
        data={"email": "kept@example.com"},
        headers={"Origin": "https://evil.example"},
    )
    assert cross.status_code == 403
    empty = await ask(client, "")
    assert empty.status_code == 422 and "Enter the email" in empty.text
    no_token = await client.post(
        "/reset-password", data={"new": NEW, "again": NEW}, headers={"Origin": "http://testserver"}
    )
    assert no_token.status_code == 404
    await account_mail.settle()
    assert mails_to(settings.outbox_dir, "kept@example.com") == []
    signed = await client.post("/sign-in", data={"email": "kept@example.com", "password": PASSWORD})
    assert signed.status_code == 303
