"""Signing in and out: one message for any wrong part, throttling, the cookie's flags."""

from __future__ import annotations

import secrets

import pytest
from fastapi import FastAPI

from tests.api.conftest import client_for, make_settings, started_app
from tests.api.test_limits import REDIS
from tests.web.conftest import PASSWORD, Db, SignIn, add_person

pytestmark = pytest.mark.anyio


async def test_without_a_session_the_root_is_the_sign_in_form(app: FastAPI) -> None:
    async with client_for(app) as client:
        page = await client.get("/")
    assert page.status_code == 200
    for text in ('<label for="email">Email</label>', '<label for="password">Password</label>'):
        assert text in page.text
    assert ">Sign in</button>" in page.text
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp


async def test_any_wrong_part_gets_the_same_message(app: FastAPI, sign_in: SignIn) -> None:
    await sign_in("ann@example.com")
    async with client_for(app) as client:
        answers = [
            await client.post("/sign-in", data={"email": email, "password": password})
            for email, password in (
                ("ann@example.com", "wrong password!"),
                ("nobody@example.com", PASSWORD),
                ("", ""),
            )
        ]
    for answer in answers:
        assert answer.status_code == 401
        assert "Wrong email or password." in answer.text
        assert "maskmail_session" not in answer.headers.get("set-cookie", "")


@pytest.mark.slow  # over 0.45 s a call on the quiet machine (make check)
async def test_failures_are_throttled_per_account(database_url: str, db: Db) -> None:
    settings = make_settings(database_url, signin_rate_limit="3/hour")
    email = f"cat{secrets.token_hex(4)}@example.com"
    await db.write(add_person, email)
    async with started_app(settings) as app:
        wrong = {"email": email, "password": "not the password"}
        async with client_for(app, peer=("10.0.0.1", 1)) as one:
            codes = [(await one.post("/sign-in", data=wrong)).status_code for _ in range(3)]
        # Another client, the right password: the account is throttled all the same.
        async with client_for(app, peer=("10.0.0.2", 1)) as two:
            right = await two.post("/sign-in", data={**wrong, "password": PASSWORD})
    assert codes == [401, 401, 401]
    assert right.status_code == 429 and "Too many attempts" in right.text


async def test_failures_are_throttled_per_client(database_url: str, db: Db) -> None:
    settings = make_settings(database_url, signin_rate_limit="3/hour")
    tag = secrets.token_hex(4)
    await db.write(add_person, f"kit{tag}@example.com")
    async with started_app(settings) as app:
        async with client_for(app, peer=("10.0.1.1", 1)) as guesser:
            # Three different accounts from one client: the fourth try is refused, even
            # with an account's right password.
            codes = [
                (
                    await guesser.post(
                        "/sign-in", data={"email": f"x{n}{tag}@example.com", "password": "no"}
                    )
                ).status_code
                for n in range(3)
            ]
            right = {"email": f"kit{tag}@example.com", "password": PASSWORD}
            refused = await guesser.post("/sign-in", data=right)
        async with client_for(app, peer=("10.0.1.2", 1)) as other:
            allowed = await other.post("/sign-in", data=right)
    assert codes == [401, 401, 401] and refused.status_code == 429
    assert allowed.status_code == 303


async def test_the_throttle_is_shared_through_redis(database_url: str, db: Db) -> None:
    """Two processes with the same Redis count one account's failures together, as the
    API's limits are."""
    settings = make_settings(database_url, signin_rate_limit="2/hour", redis_url=REDIS)
    email = f"lou{secrets.token_hex(4)}@example.com"
    await db.write(add_person, email)
    wrong = {"email": email, "password": "not the password"}
    async with (
        started_app(settings) as one,
        started_app(settings) as two,
        # Redis keeps the counts between runs: clients new to it each time.
        client_for(one, peer=(f"10.2.{secrets.randbelow(250)}.{secrets.randbelow(250)}", 1)) as a,
        client_for(two, peer=(f"10.3.{secrets.randbelow(250)}.{secrets.randbelow(250)}", 1)) as b,
    ):
        first = (await a.post("/sign-in", data=wrong)).status_code
        second = (await b.post("/sign-in", data=wrong)).status_code
        third = await a.post("/sign-in", data={**wrong, "password": PASSWORD})
    assert (first, second) == (401, 401)
    assert third.status_code == 429


async def test_cookie_flags_and_secure_behind_a_trusted_https_proxy(app: FastAPI, db: Db) -> None:
    await db.write(add_person, "dan@example.com")
    body = {"email": "dan@example.com", "password": PASSWORD}
    async with client_for(app) as client:
        plain = await client.post("/sign-in", data=body)
        https = await client.post("/sign-in", data=body, headers={"X-Forwarded-Proto": "https"})
    async with client_for(app, peer=("203.0.113.9", 1)) as stranger:
        spoofed = await stranger.post("/sign-in", data=body, headers={"X-Forwarded-Proto": "https"})
    for answer in (plain, https, spoofed):
        cookie = answer.headers["set-cookie"].lower()
        assert answer.status_code == 303
        assert "httponly" in cookie and "samesite=lax" in cookie
    assert "secure" in https.headers["set-cookie"].lower()
    assert "secure" not in plain.headers["set-cookie"].lower()
    assert "secure" not in spoofed.headers["set-cookie"].lower()


async def test_sign_out_ends_the_session(sign_in: SignIn) -> None:
    ann = await sign_in("eve@example.com")
    assert "Sign out" in (await ann.client.get("/")).text
    token = ann.client.cookies["maskmail_session"]
    assert (await ann.post("/sign-out")).status_code == 303
    # The old cookie, sent again, names no session.
    ann.client.cookies.set("maskmail_session", token)
    assert "Sign in to maskmail" in (await ann.client.get("/")).text


async def test_a_password_change_ends_the_other_sessions(sign_in: SignIn, app: FastAPI) -> None:
    first = await sign_in("fay@example.com")
    async with client_for(app) as other:
        answer = await other.post(
            "/sign-in", data={"email": "fay@example.com", "password": PASSWORD}
        )
        assert answer.status_code == 303
        changed = await first.post(
            "/password",
            {"current": PASSWORD, "new": "a new long password", "again": "a new long password"},
        )
        assert changed.status_code == 200 and "Password changed" in changed.text
        assert "Sign in to maskmail" in (await other.get("/")).text
    assert "Sign out" in (await first.client.get("/")).text


async def test_cross_site_posts_are_refused(sign_in: SignIn) -> None:
    ann = await sign_in("gil@example.com")
    token = await ann.csrf()
    foreign = await ann.client.post(
        "/addresses", data={"csrf": token}, headers={"Origin": "http://evil.test"}
    )
    tokenless = await ann.client.post("/addresses", headers={"Origin": "http://testserver"})
    cross_fetch = await ann.client.post(
        "/addresses", data={"csrf": token}, headers={"Sec-Fetch-Site": "cross-site"}
    )
    assert [r.status_code for r in (foreign, tokenless, cross_fetch)] == [403, 403, 403]
    listing = await ann.client.get("/")
    assert "No addresses yet" in listing.text


async def test_a_change_without_a_session_goes_to_sign_in(app: FastAPI) -> None:
    async with client_for(app) as client:
        answer = await client.post("/addresses/1", data={"csrf": "x", "enabled": "false"})
    assert answer.status_code == 303 and answer.headers["location"] == "/"
