"""The sign-up pages: each refusal, the code and the link, the limits, and the same answer
whether or not the address has an account."""

from __future__ import annotations

import mailbox
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from statistics import median

import httpx
import pytest
from argon2 import PasswordHasher
from fastapi import FastAPI
from sqlalchemy import update

from maskmail.config import Settings
from maskmail.core import passwords
from maskmail.services import invitations
from maskmail.store import accounts, mailboxes
from maskmail.store.clock import now
from maskmail.store.tables import invitations as invitation_rows
from tests.api.conftest import client_for, make_settings, started_app
from tests.web.conftest import Db, add_person, verification_code

pytestmark = pytest.mark.anyio

PASSWORD = "a good long password"
ORIGIN = {"Origin": "http://testserver"}
_TICKET = re.compile(r'name="ticket" value="([^"]*)"')


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return make_settings(
        database_url,
        data_dir=tmp_path,
        domain="maskrelay.net",
        signup="open",
        signup_rate_limit="100/minute",
    )


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(app) as c:
        yield c


async def _sign_up(client: httpx.AsyncClient, email: str, **extra: str) -> httpx.Response:
    data = {"email": email, "password": PASSWORD, **extra}
    return await client.post("/sign-up", data=data, headers=ORIGIN)


def _ticket(page: httpx.Response) -> str:
    found = _TICKET.search(page.text)
    assert found is not None
    return found.group(1)


def _mails_to(outbox: Path, recipient: str) -> list[str]:
    found = [m for m in mailbox.Maildir(outbox, create=False) if m["To"] == recipient]
    return [bytes(m.get_payload(decode=True)).decode() for m in found]


async def _code(client: httpx.AsyncClient, page: httpx.Response, code: str) -> httpx.Response:
    data = {"ticket": _ticket(page), "email": "", "code": code}
    return await client.post("/sign-up/code", data=data, headers=ORIGIN)


async def test_open_sign_up_with_the_code(client: httpx.AsyncClient, settings: Settings) -> None:
    form = await client.get("/")
    assert 'href="/sign-up"' in form.text and "Ask your administrator" not in form.text
    page = await client.get("/sign-up")
    assert page.status_code == 200 and 'name="invite"' not in page.text
    sent = await _sign_up(client, "joe@example.com")
    assert sent.status_code == 200 and "Check your mail" in sent.text
    # Not before the mailbox is verified.
    early = await client.post("/sign-in", data={"email": "joe@example.com", "password": PASSWORD})
    assert early.status_code == 401
    done = await _code(client, sent, verification_code(settings.outbox_dir, "joe@example.com"))
    assert done.status_code == 200 and "Your account is ready" in done.text
    signed = await client.post("/sign-in", data={"email": "joe@example.com", "password": PASSWORD})
    assert signed.status_code == 303


async def test_the_link_page_changes_nothing_until_its_button(
    client: httpx.AsyncClient, settings: Settings, db: Db
) -> None:
    await _sign_up(client, "lin@example.com")
    [text] = _mails_to(settings.outbox_dir, "lin@example.com")
    found = re.search(r"http://testserver(/sign-up/verify\?token=\S+)", text)
    assert found is not None
    shown = await client.get(found.group(1))
    assert shown.status_code == 200 and "Verify and finish" in shown.text
    user = await db.read(accounts.user_id_for_email, "lin@example.com")
    assert not (await db.read(mailboxes.list_mailboxes, user))[0].verified
    token = found.group(1).partition("token=")[2]
    done = await client.post("/sign-up/verify", data={"token": token}, headers=ORIGIN)
    assert done.status_code == 200 and "Your account is ready" in done.text
    again = await client.post("/sign-up/verify", data={"token": token}, headers=ORIGIN)
    assert again.status_code == 404 and "used already or has expired" in again.text


async def test_a_wrong_code_then_too_many(client: httpx.AsyncClient, settings: Settings) -> None:
    sent = await _sign_up(client, "guess@example.com")
    right = verification_code(settings.outbox_dir, "guess@example.com")
    wrong = "000000" if right != "000000" else "111111"
    answers = [await _code(client, sent, wrong) for _ in range(5)]
    assert {a.status_code for a in answers} == {422}
    assert "Wrong or expired code." in answers[0].text
    late = await _code(client, sent, right)
    assert late.status_code == 429 and "Too many codes were tried" in late.text


async def test_closed_sign_up(database_url: str, tmp_path: Path, db: Db) -> None:
    async with (
        started_app(make_settings(database_url, data_dir=tmp_path)) as app,
        client_for(app) as client,
    ):
        form = await client.get("/")
        assert "Ask your administrator" in form.text and "/sign-up" not in form.text
        assert (await client.get("/sign-up")).status_code == 404
        refused = await _sign_up(client, "closed@example.com")
        assert refused.status_code == 404 and "Sign-up is closed" in refused.text
        code = await client.post("/sign-up/code", data={"ticket": "x", "code": "1"}, headers=ORIGIN)
        assert code.status_code == 404
    assert await db.read(accounts.count_users) == 0


async def test_an_address_of_the_relay_is_refused(client: httpx.AsyncClient, db: Db) -> None:
    refused = await _sign_up(client, "me@sub.maskrelay.net")
    assert refused.status_code == 422 and "at the relay&#39;s own domain" in refused.text
    assert await db.read(accounts.count_users) == 0


async def test_another_site_cannot_sign_up(client: httpx.AsyncClient) -> None:
    data = {"email": "x@example.com", "password": PASSWORD}
    answer = await client.post("/sign-up", data=data, headers={"Origin": "https://evil.example"})
    assert answer.status_code == 403


def _same_page(page: httpx.Response, email: str) -> str:
    return _TICKET.sub("", page.text).replace(email, "EMAIL")


@pytest.mark.slow
async def test_a_taken_address_is_answered_the_same(
    client: httpx.AsyncClient, settings: Settings, db: Db, monkeypatch: pytest.MonkeyPatch
) -> None:
    await db.write(add_person, "had@example.com")
    # The real argon2 cost, as in production: the hash is most of either answer's time.
    monkeypatch.setattr(passwords, "_hasher", PasswordHasher())
    new_times, taken_times = [], []
    for n in range(5):
        start = time.perf_counter()
        new = await _sign_up(client, f"new{n}@example.com")
        new_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        taken = await _sign_up(client, "had@example.com")
        taken_times.append(time.perf_counter() - start)
        assert taken.status_code == new.status_code == 200
        assert _same_page(taken, "had@example.com") == _same_page(new, f"new{n}@example.com")
    # Both hash the password and send one message: neither is a fraction of the other.
    assert 1 / 3 < median(taken_times) / median(new_times) < 3
    notices = _mails_to(settings.outbox_dir, "had@example.com")
    assert len(notices) == 5 and "you have one already" in notices[0]
    assert "code" not in notices[0]
    user = await db.read(accounts.user_id_for_email, "had@example.com")
    assert len(await db.read(mailboxes.list_mailboxes, user)) == 1


async def test_sign_ups_are_limited_per_client_and_per_address(
    database_url: str, tmp_path: Path, db: Db
) -> None:
    settings = make_settings(
        database_url, data_dir=tmp_path, signup="open", signup_rate_limit="2/hour"
    )
    async with started_app(settings) as app:
        async with client_for(app, peer=("10.0.0.1", 1)) as one:
            answers = [await _sign_up(one, f"c{n}@example.com") for n in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 429]
        assert int(answers[2].headers["Retry-After"]) > 0
        statuses = []
        for n in range(3):
            async with client_for(app, peer=(f"10.0.1.{n}", 1)) as other:
                statuses.append((await _sign_up(other, "Same@example.com")).status_code)
        assert statuses == [200, 200, 429]
    assert len(_mails_to(settings.outbox_dir, "Same@example.com")) == 2


@pytest.fixture
def invite_settings(database_url: str, tmp_path: Path) -> Settings:
    return make_settings(database_url, data_dir=tmp_path, signup="invite")


async def test_invitations(invite_settings: Settings, db: Db) -> None:
    made = await db.write(invitations.create)
    expired = await db.write(invitations.create)
    await db.write(
        lambda conn: conn.execute(
            update(invitation_rows)
            .where(invitation_rows.c.id == expired.invitation.id)
            .values(expires_time=now() - 1)
        )
    )
    async with started_app(invite_settings) as app, client_for(app) as client:
        page = await client.get(f"/sign-up?invite={made.token}")
        assert page.status_code == 200 and f'value="{made.token}"' in page.text
        for token in ("", "mmi_unknown", expired.token):
            refused = await _sign_up(client, "inv@example.com", invite=token)
            assert refused.status_code == 422 and "This invitation is not valid" in refused.text
        shown = await client.get(f"/sign-up?invite={expired.token}")
        assert "This invitation is not valid" in shown.text
        ok = await _sign_up(client, "inv@example.com", invite=made.token)
        assert ok.status_code == 200 and "Check your mail" in ok.text
        used = await _sign_up(client, "inv2@example.com", invite=made.token)
        assert used.status_code == 422 and "This invitation is not valid" in used.text
        form = await client.get("/")
        assert 'href="/sign-up"' in form.text
    assert await db.read(accounts.count_users) == 1
