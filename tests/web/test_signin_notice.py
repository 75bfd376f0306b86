"""A sign-in from a browser new to the user mails them a notice (time, client, browser)
at their default mailbox; the browsers they had signed in from do not."""

from __future__ import annotations

import mailbox
from pathlib import Path

import pytest
from fastapi import FastAPI

from maskmail.config import Settings
from maskmail.services import account_mail
from maskmail.web.device_cookie import COOKIE
from tests.api.conftest import client_for, make_settings
from tests.web.conftest import PASSWORD, Db, add_person

pytestmark = pytest.mark.anyio
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return make_settings(database_url, data_dir=tmp_path)


def notices(outbox: Path) -> list[str]:
    if not outbox.exists():
        return []
    found = []
    for message in mailbox.Maildir(outbox, create=False):
        assert message["To"] == "nia@example.com"
        assert message["Subject"] == "New sign-in to maskmail from a new device"
        payload = message.get_payload(decode=True)
        assert isinstance(payload, bytes)
        found.append(payload.decode())
    return found


async def test_only_a_new_device_is_told(app: FastAPI, db: Db, settings: Settings) -> None:
    await db.write(add_person, "nia@example.com")
    form = {"email": "nia@example.com", "password": PASSWORD}
    headers = {"User-Agent": FIREFOX, "X-Forwarded-For": "198.51.100.23"}
    async with client_for(app) as laptop:
        first = await laptop.post("/sign-in", data=form, headers=headers)
        assert first.status_code == 303
        cookie = laptop.cookies[COOKIE]
        assert "HttpOnly" in first.headers.get_list("set-cookie")[-1]
        # The same browser again: known.
        await laptop.post("/sign-out", data={"csrf": "x"})
        assert (await laptop.post("/sign-in", data=form, headers=headers)).status_code == 303
        assert laptop.cookies[COOKIE] == cookie
    await account_mail.settle()
    # The account's first device is remembered without a notice.
    assert notices(settings.outbox_dir) == []
    async with client_for(app) as phone:
        wrong = {**form, "password": "not the password"}
        assert (await phone.post("/sign-in", data=wrong, headers=headers)).status_code == 401
        assert COOKIE not in phone.cookies  # a failed sign-in notes no device
        assert (await phone.post("/sign-in", data=form, headers=headers)).status_code == 303
        await account_mail.settle()
        (text,) = notices(settings.outbox_dir)
        assert "From: 198.51.100.23" in text and "Browser: Firefox on Linux" in text
        assert " UTC" in text and PASSWORD not in text and phone.cookies[COOKIE] not in text
        # The phone is known now.
        assert (await phone.post("/sign-in", data=form, headers=headers)).status_code == 303
    await account_mail.settle()
    assert len(notices(settings.outbox_dir)) == 1
