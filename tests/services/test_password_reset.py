"""Password reset, account deletion and the new-device notice as workflows, with no
HTTP: the link maker and the sender are handed in, as the dashboard hands them."""

from __future__ import annotations

import asyncio
import re
from email import message_from_bytes
from email.message import Message
from hashlib import sha256

import pytest
from argon2 import PasswordHasher
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from maskmail.config import Settings
from maskmail.core import passwords
from maskmail.core.errors import UserNotFound
from maskmail.services import account_deletion, account_mail, devices, password_reset
from maskmail.services.password_reset import LinkUnusable, PasswordsDiffer
from maskmail.store import accounts, sessions
from maskmail.store import addresses as store_addresses
from maskmail.store.engine import transaction
from maskmail.store.tables import password_resets, tombstones
from tests.services.test_mailboxes import Recorder

pytestmark = pytest.mark.anyio

SETTINGS = Settings(domain="maskrelay.net")
OLD = "the old password"
NEW = "a brand new password"


@pytest.fixture(autouse=True)
def cheap_argon2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        passwords, "_hasher", PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
    )


class Links:
    """A link maker that remembers the tokens it was given."""

    def __init__(self) -> None:
        self.tokens: list[str] = []

    def __call__(self, token: str) -> str:
        self.tokens.append(token)
        return f"https://relay.example/reset-password?token={token}"


def text_of(message: bytes) -> tuple[Message, str]:
    parsed = message_from_bytes(message)
    assert parsed.get_content_type() == "text/plain"
    body = parsed.get_payload(decode=True)
    assert isinstance(body, bytes)
    return parsed, body.decode()


async def _person(conn: AsyncConnection, email: str) -> int:
    user = await accounts.add_user(conn, email)
    await sessions.set_password(conn, user, passwords.hash_password(OLD))
    await sessions.start_session(conn, user, session_of(email), lifetime=3600)
    return user


def session_of(email: str) -> str:
    return sha256(email.encode()).hexdigest()


async def test_a_link_goes_to_the_default_mailbox_and_only_its_hash_is_kept(
    conn: AsyncConnection,
) -> None:
    await _person(conn, "Lee@Example.com")
    links = Links()
    made = await password_reset.prepare_link(conn, SETTINGS, "lee@example.COM", links)
    assert made is not None
    message, mailbox = made
    assert mailbox == "Lee@Example.com"
    parsed, text = text_of(message)
    assert parsed["To"] == "Lee@Example.com" and parsed["From"] == "accounts@maskrelay.net"
    assert parsed["Auto-Submitted"] == "auto-generated"
    (token,) = links.tokens
    assert f"token={token}" in text and "within an hour" in text
    kept = (await conn.execute(select(password_resets.c.token_hash))).scalars().all()
    assert password_reset.digest(token) in kept and token not in kept
    # Nobody has the email: nothing is kept, nothing to send.
    assert await password_reset.prepare_link(conn, SETTINGS, "nobody@example.com", links) is None
    assert len(links.tokens) == 1


async def test_asking_again_and_again_mails_at_most_three_live_links(
    conn: AsyncConnection,
) -> None:
    await _person(conn, "again@example.com")
    links = Links()
    made = [
        await password_reset.prepare_link(conn, SETTINGS, "again@example.com", links)
        for _ in range(5)
    ]
    assert [m is not None for m in made] == [True, True, True, False, False]


async def test_the_link_sets_the_password_once_and_signs_out_everywhere(
    conn: AsyncConnection,
) -> None:
    user = await _person(conn, "kim@example.com")
    links = Links()
    await password_reset.prepare_link(conn, SETTINGS, "kim@example.com", links)
    (token,) = links.tokens
    # Refusals change nothing: the link still works, the old password and session stay.
    with pytest.raises(PasswordsDiffer):
        await password_reset.reset_password(conn, token, NEW, NEW + "x")
    with pytest.raises(passwords.WeakPassword):
        await password_reset.reset_password(conn, token, "short", "short")
    with pytest.raises(LinkUnusable):
        await password_reset.reset_password(conn, "not-a-token", NEW, NEW)
    assert await password_reset.link_is_live(conn, token)
    assert await sessions.session_user(conn, session_of("kim@example.com")) is not None
    assert await password_reset.reset_password(conn, token, NEW, NEW) == user
    account = await sessions.account_for_user(conn, user)
    assert passwords.verify(account.password_hash, NEW)
    assert await sessions.session_user(conn, session_of("kim@example.com")) is None
    assert not await password_reset.link_is_live(conn, token)
    with pytest.raises(LinkUnusable):
        await password_reset.reset_password(
            conn, token, "yet another password", "yet another password"
        )


async def test_two_uses_at_once_exactly_one_wins(engine: AsyncEngine) -> None:
    email = f"race-{id(engine)}@example.com"
    async with transaction(engine) as conn:
        user = await _person(conn, email)
        links = Links()
        await password_reset.prepare_link(conn, SETTINGS, email, links)
    (token,) = links.tokens

    async def use(password: str) -> str | None:
        try:
            async with transaction(engine) as conn:
                await password_reset.reset_password(conn, token, password, password)
        except LinkUnusable:
            return None
        return password

    won = [p for p in await asyncio.gather(*(use(f"password number {n}") for n in range(4))) if p]
    assert len(won) == 1
    async with transaction(engine, readonly=True) as conn:
        account = await sessions.account_for_user(conn, user)
    assert passwords.verify(account.password_hash, won[0])


async def test_mail_link_commits_before_it_sends(engine: AsyncEngine) -> None:
    email = f"sent-{id(engine)}@example.com"
    async with transaction(engine) as conn:
        await _person(conn, email)
    recorder, links = Recorder(), Links()
    await password_reset.mail_link(engine, SETTINGS, recorder, email, links)
    await password_reset.mail_link(engine, SETTINGS, recorder, "no-" + email, links)
    ((message, sender, recipient),) = recorder.sent
    assert (sender, recipient) == ("", email) and links.tokens[0] in text_of(message)[1]
    async with transaction(engine, readonly=True) as conn:
        assert await password_reset.link_is_live(conn, links.tokens[0])


async def test_deleting_an_account_is_the_operators_deletion(conn: AsyncConnection) -> None:
    user = await _person(conn, "del@example.com")
    await store_addresses.create_address(conn, user, domain="maskrelay.net", length=8)
    assert not await account_deletion.needs_second_factor(conn, user)
    exported = await account_deletion.export_account(conn, user)
    assert exported["email"] == "del@example.com" and len(exported["addresses"]) == 1
    before = await conn.scalar(select(func.count()).select_from(tombstones))
    assert await account_deletion.delete_account(conn, user) == 1
    # The address keeps its tombstone (kept when it was made and again at deletion).
    assert await conn.scalar(select(func.count()).select_from(tombstones)) == before
    assert await sessions.session_user(conn, session_of("del@example.com")) is None
    with pytest.raises(UserNotFound):
        await account_deletion.delete_account(conn, user)


@pytest.mark.parametrize(
    ("agent", "summary"),
    [
        (
            "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
            "Firefox on Linux",
        ),
        (
            "Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/126.0 Mobile Safari/537.36",
            "Chrome on Android",
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/126.0 Safari/537.36 Edg/126.0",
            "Edge on Windows",
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 "
            "(KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
            "Safari on iOS",
        ),
        ("", "an unknown browser"),
    ],
)
def test_agent_summary(agent: str, summary: str) -> None:
    assert devices.agent_summary(agent) == summary


async def test_a_new_device_is_told_to_the_default_mailbox(conn: AsyncConnection) -> None:
    user = await _person(conn, "dev@example.com")
    firefox = "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/128.0"

    async def sign_in(cookie: str | None, settings: Settings = SETTINGS) -> devices.SignInSeen:
        return await devices.sign_in_from(
            conn, settings, user, cookie=cookie, client="203.0.113.9", user_agent=firefox
        )

    first = await sign_in(None)
    assert first.notice is None and re.fullmatch(r"[\w-]{43}", first.token)
    assert (await sign_in(first.token)).notice is None
    # A cookie this server never made is no device of the user's: a new one is made.
    forged = await sign_in("x" * 43)
    assert forged.token == "x" * 43 and forged.notice is not None
    other = await sign_in("<script>")
    assert other.token != "<script>" and other.notice is not None
    message, mailbox = other.notice
    assert mailbox == "dev@example.com"
    parsed, text = text_of(message)
    assert parsed["Subject"] == "New sign-in to maskmail from a new device"
    assert "From: 203.0.113.9" in text and "Browser: Firefox on Linux" in text
    assert re.search(r"When: \d{4}-\d\d-\d\d \d\d:\d\d UTC", text)
    quiet = Settings(domain="maskrelay.net", signin_notice=False)
    assert (await sign_in(None, quiet)).notice is None


def test_the_reset_rate_is_checked_at_start_up() -> None:
    assert Settings(password_reset_rate_limit="2/minute").password_reset_rate_limit == "2/minute"
    with pytest.raises(ValueError, match="5/hour"):
        Settings(password_reset_rate_limit="often")


async def test_mail_still_leaving_at_shutdown_is_waited_for_then_given_up() -> None:
    recorder = Recorder()
    stuck = asyncio.Event()

    async def slow() -> None:
        await stuck.wait()

    assert account_mail.start(account_mail.deliver(recorder, b"one", "a@example.com"), "one")
    assert account_mail.start(slow(), "stuck")
    started = asyncio.get_running_loop().time()
    await account_mail.settle(0.2)
    assert asyncio.get_running_loop().time() - started < 5
    assert [r[2] for r in recorder.sent] == ["a@example.com"]
    await account_mail.settle()  # nothing is left waiting
