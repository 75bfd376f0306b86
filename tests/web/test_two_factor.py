"""Two-factor sign-in through the dashboard, on both backends: enrolment, the second
step and its refusals (wrong, replayed, too many, recovery code twice), turning it off,
and API keys left alone. The clock is held still (services/two_factor.now)."""

from __future__ import annotations

import html
import json
import re
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pyotp
import pytest
from fastapi import FastAPI

from maskmail.core import keys
from maskmail.services import two_factor
from maskmail.services.two_factor import STEP
from maskmail.store import accounts, users_admin
from maskmail.store import two_factor as store
from tests.api.conftest import client_for, make_settings, started_app
from tests.web.conftest import PASSWORD, Db, Person, SignIn, add_person

pytestmark = pytest.mark.anyio
START = 1_790_000_015.0
ORIGIN = {"Origin": "http://testserver"}


class Clock:
    def __init__(self) -> None:
        self.moment = START

    def __call__(self) -> float:
        return self.moment


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    held = Clock()
    monkeypatch.setattr(two_factor, "now", held)
    return held


async def enrol(person: Person, clock: Clock) -> tuple[pyotp.TOTP, list[str]]:
    """Set up an app from the page: its secret, then the recovery codes it shows."""
    started = await person.post("/two-factor/totp")
    assert started.status_code == 200 and '<svg role="img"' in started.text
    found = re.search(r'id="totp-secret">([A-Z2-7]+)<', started.text)
    assert found is not None
    app = pyotp.TOTP(found.group(1), interval=STEP)
    confirmed = await person.post("/two-factor/totp/confirm", {"code": app.at(clock())})
    assert confirmed.status_code == 200, confirmed.text
    codes = re.findall(r"<li><code>([a-z0-9-]+)</code></li>", confirmed.text)
    assert len(codes) == 10
    return app, codes


async def enrolled(
    sign_in: SignIn, clock: Clock, email: str
) -> tuple[Person, pyotp.TOTP, list[str]]:
    """A signed-in person with an app set up, the clock a step past the enrolment's code."""
    person = await sign_in(email)
    totp, codes = await enrol(person, clock)
    clock.moment += STEP
    return person, totp, codes


@asynccontextmanager
async def password_step(app: FastAPI, email: str) -> AsyncIterator[httpx.AsyncClient]:
    """A new client past the password: waiting for its second step."""
    async with client_for(app) as client:
        answer = await client.post("/sign-in", data={"email": email, "password": PASSWORD})
        assert answer.status_code == 303 and answer.headers["location"] == "/sign-in/second"
        assert "maskmail_session" not in client.cookies
        yield client


async def second(client: httpx.AsyncClient, code: str) -> httpx.Response:
    return await client.post("/sign-in/second", data={"code": code}, headers=ORIGIN)


def signed_in(answer: httpx.Response) -> bool:
    return answer.status_code == 303 and "maskmail_session=" in answer.headers.get("set-cookie", "")


async def test_enrolment_needs_a_code_and_says_api_keys_are_not_affected(
    sign_in: SignIn, clock: Clock
) -> None:
    ann = await sign_in("ann2fa@example.com")
    page = await ann.client.get("/two-factor")
    assert "Two-factor is <strong" in page.text and ">off<" in page.text
    assert "API keys are not affected" in page.text
    started = await ann.post("/two-factor/totp")
    secret = re.search(r'id="totp-secret">([A-Z2-7]+)<', started.text)
    assert secret is not None
    wrong = await ann.post("/two-factor/totp/confirm", {"code": "000000"})
    assert wrong.status_code == 422 and "wrong" in wrong.text
    assert ">off<" in (await ann.client.get("/two-factor")).text
    right = pyotp.TOTP(secret.group(1)).at(clock())
    assert (await ann.post("/two-factor/totp/confirm", {"code": right})).status_code == 200
    page = await ann.client.get("/two-factor")
    assert ">on<" in page.text and "10 of 10 recovery codes left" in page.text


async def test_a_session_is_made_only_after_the_second_step(
    app: FastAPI, sign_in: SignIn, clock: Clock
) -> None:
    bea = await sign_in("bea2fa@example.com")
    totp, _ = await enrol(bea, clock)
    async with password_step(app, bea.email) as client:
        # Waiting is not signed in.
        assert "Sign in to maskmail" in (await client.get("/")).text
        assert (await client.get("/two-factor")).status_code == 303
        shown = await client.get("/sign-in/second")
        assert "Code from your authenticator app" in shown.text
        wrong = await second(client, "000000")
        assert wrong.status_code == 401 and "wrong" in wrong.text
        clock.moment += STEP
        right = await second(client, totp.at(clock()))
        assert signed_in(right)
        assert "Sign out" in (await client.get("/")).text
        # The waiting state was single-use.
        again = await client.post("/sign-in/second", data={"code": "000000"}, headers=ORIGIN)
        assert again.status_code == 401 and "has ended" in again.text


async def test_a_replayed_code_is_refused(app: FastAPI, sign_in: SignIn, clock: Clock) -> None:
    cat, totp, _ = await enrolled(sign_in, clock, "cat2fa@example.com")
    code = totp.at(clock())
    async with password_step(app, cat.email) as first:
        assert signed_in(await second(first, code))
    async with password_step(app, cat.email) as thief:
        clock.moment += 5  # the same step, the same code
        replayed = await second(thief, code)
        assert replayed.status_code == 401 and "maskmail_session" not in thief.cookies


async def test_a_recovery_code_works_once(app: FastAPI, sign_in: SignIn, clock: Clock) -> None:
    dot = await sign_in("dot2fa@example.com")
    _, codes = await enrol(dot, clock)
    async with password_step(app, dot.email) as client:
        assert signed_in(await second(client, codes[0]))
    async with password_step(app, dot.email) as client:
        used = await second(client, codes[0])
        assert used.status_code == 401
        assert signed_in(await second(client, codes[1].upper()))
    assert "8 of 10 recovery codes left" in (await dot.client.get("/two-factor")).text


async def test_too_many_wrong_codes_end_the_sign_in(
    app: FastAPI, sign_in: SignIn, clock: Clock
) -> None:
    eve, totp, _ = await enrolled(sign_in, clock, "eve2fa@example.com")
    async with password_step(app, eve.email) as client:
        statuses = [
            (await second(client, f"{n:06d}")).status_code for n in range(two_factor.MAX_FAILURES)
        ]
        ended = await second(client, totp.at(clock()))
    assert statuses == [401] * two_factor.MAX_FAILURES
    assert ended.status_code == 401 and "has ended" in ended.text
    assert "maskmail_session" not in ended.headers.get("set-cookie", "")


@pytest.mark.slow
async def test_the_second_step_is_throttled_per_account(
    database_url: str, db: Db, clock: Clock
) -> None:
    settings = make_settings(database_url, two_factor_rate_limit="3/hour")
    email = f"fox{secrets.token_hex(4)}@example.com"
    await db.write(add_person, email)
    async with started_app(settings) as app:
        async with client_for(app) as owner:
            await owner.post("/sign-in", data={"email": email, "password": PASSWORD})
            person = Person(email, 0, owner)
            totp, _ = await enrol(person, clock)
        clock.moment += STEP
        codes: list[int] = []
        for peer in ("10.9.0.1", "10.9.0.2"):
            async with client_for(app, peer=(peer, 1)) as client:
                await client.post("/sign-in", data={"email": email, "password": PASSWORD})
                codes += [(await second(client, "000000")).status_code for _ in range(2)]
        async with client_for(app, peer=("10.9.0.3", 1)) as client:
            await client.post("/sign-in", data={"email": email, "password": PASSWORD})
            right = await second(client, totp.at(clock()))
    assert codes == [401, 401, 401, 429]
    # From a third client, the right code: the account's wrong tries are used up.
    assert right.status_code == 429 and "maskmail_session" not in client.cookies


async def test_turning_off_needs_the_password_and_a_code(
    app: FastAPI, sign_in: SignIn, clock: Clock
) -> None:
    gil, totp, codes = await enrolled(sign_in, clock, "gil2fa@example.com")
    without = await gil.post("/two-factor/off", {"password": "", "code": totp.at(clock())})
    wrong_password = await gil.post(
        "/two-factor/off", {"password": "not it at all", "code": totp.at(clock())}
    )
    without_code = await gil.post("/two-factor/off", {"password": PASSWORD, "code": ""})
    assert [a.status_code for a in (without, wrong_password, without_code)] == [422] * 3
    assert ">on<" in (await gil.client.get("/two-factor")).text
    off = await gil.post("/two-factor/off", {"password": PASSWORD, "code": codes[0]})
    assert off.status_code == 200 and "Two-factor sign-in is off" in off.text
    async with client_for(app) as client:
        answer = await client.post("/sign-in", data={"email": gil.email, "password": PASSWORD})
    assert signed_in(answer)


async def test_api_keys_are_not_affected(
    app: FastAPI, sign_in: SignIn, db: Db, clock: Clock
) -> None:
    hal = await sign_in("hal2fa@example.com")
    await enrol(hal, clock)
    key = keys.generate_key()
    await db.write(accounts.add_key, hal.user_id, keys.hash_key(key))
    async with client_for(app) as client:
        answer = await client.get("/v3/relay/addresses", headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 200


@pytest.mark.slow
async def test_the_waiting_cookie_is_no_session(
    app: FastAPI, sign_in: SignIn, clock: Clock
) -> None:
    ivy = await sign_in("ivy2fa@example.com")
    await enrol(ivy, clock)
    async with password_step(app, ivy.email) as client:
        waiting = client.cookies["maskmail_pending"]
    async with client_for(app) as other:
        other.cookies.set("maskmail_session", waiting)
        assert "Sign in to maskmail" in (await other.get("/")).text
    # And the second step without the waiting cookie has nothing to finish.
    async with client_for(app) as stranger:
        answer = await second(stranger, "000000")
    assert answer.status_code == 401 and "has ended" in answer.text


async def test_security_keys_need_a_host_name(sign_in: SignIn, app: FastAPI) -> None:
    jay = await sign_in("jay2fa@example.com")
    named = await jay.post("/two-factor/keys/new", {"name": "Blue key"})
    assert named.status_code == 200 and 'data-webauthn="create"' in named.text
    options = re.search(r'data-options="([^"]+)"', named.text)
    assert options is not None
    assert json.loads(html.unescape(options.group(1)))["rp"]["id"] == "testserver"
    # The page's script is our own file, versioned by its hash, and served.
    script = re.search(r'<script src="(/assets/two_factor\.js\?v=[0-9a-f]{12})"', named.text)
    assert script is not None
    served = await jay.client.get(script.group(1))
    assert served.status_code == 200 and "navigator.credentials.create" in served.text
    # At an IP address the browser would refuse the relying party: the page says so.
    token = await jay.csrf()
    at_ip = await jay.client.post(
        "/two-factor/keys/new",
        data={"csrf": token, "name": "Blue key"},
        headers={"Host": "127.0.0.1", "Origin": "http://127.0.0.1"},
    )
    assert at_ip.status_code == 422 and "not an IP address" in at_ip.text


async def test_a_key_answer_that_does_not_verify_adds_nothing(sign_in: SignIn, db: Db) -> None:
    kim = await sign_in("kim2fa@example.com")
    assert (await kim.post("/two-factor/keys/new", {"name": "Fake"})).status_code == 200
    forged = '{"id": "AAAA", "rawId": "AAAA", "type": "public-key", "response": {}}'
    for credential in (forged, "not json", ""):
        answer = await kim.post("/two-factor/keys", {"name": "Fake", "credential": credential})
        assert answer.status_code == 422 and "was not added" in answer.text
    state = await db.read(two_factor.status, kim.user_id)
    assert not state.on and state.recovery_left == 0


async def test_the_last_second_factor_is_not_removed_alone(
    sign_in: SignIn, db: Db, clock: Clock
) -> None:
    lea = await sign_in("lea2fa@example.com")
    key_id = await db.write(
        store.add_key, lea.user_id, credential_id="lea-1", public_key="pk", sign_count=0, name="K"
    )
    wrong = await lea.post(f"/two-factor/keys/{key_id}/delete", {"password": "not the one"})
    last = await lea.post(f"/two-factor/keys/{key_id}/delete", {"password": PASSWORD})
    assert wrong.status_code == 422 and "password is wrong" in wrong.text
    assert last.status_code == 422 and "last second factor" in last.text
    await enrol(lea, clock)
    removed = await lea.post(f"/two-factor/keys/{key_id}/delete", {"password": PASSWORD})
    assert removed.status_code == 303
    assert (await db.read(store.count_keys, lea.user_id)) == 0


async def test_the_rp_id_setting_wins_over_the_host(database_url: str, db: Db) -> None:
    settings = make_settings(database_url, webauthn_rp_id="relay.example.com")
    email = f"max{secrets.token_hex(4)}@example.com"
    user_id = await db.write(add_person, email)
    async with started_app(settings) as app, client_for(app) as client:
        await client.post("/sign-in", data={"email": email, "password": PASSWORD})
        named = await Person(email, user_id, client).post("/two-factor/keys/new", {"name": "K"})
    options = re.search(r'data-options="([^"]+)"', named.text)
    assert options is not None
    assert json.loads(html.unescape(options.group(1)))["rp"]["id"] == "relay.example.com"


async def test_deleting_the_account_needs_the_second_factor_too(
    sign_in: SignIn, clock: Clock, db: Db
) -> None:
    ida, totp, _ = await enrolled(sign_in, clock, "ida2fa@example.com")
    asked = await ida.client.get("/account/delete")
    assert asked.status_code == 200 and 'name="second"' in asked.text
    for wrong in ({"password": PASSWORD}, {"password": PASSWORD, "second": "000000"}):
        refused = await ida.post("/account/delete", wrong)
        assert refused.status_code == 422, refused.text
        assert "second factor is wrong" in refused.text
    emails = [u.email for u in await db.read(users_admin.list_users)]
    assert "ida2fa@example.com" in emails
    done = await ida.post("/account/delete", {"password": PASSWORD, "second": totp.at(clock())})
    assert done.status_code == 303 and done.headers["location"] == "/account/deleted"
    emails = [u.email for u in await db.read(users_admin.list_users)]
    assert "ida2fa@example.com" not in emails


async def test_deleting_the_account_takes_a_recovery_code(
    sign_in: SignIn, clock: Clock, db: Db
) -> None:
    # A recovery code has letters: the field must not ask a phone for digits alone.
    jo, _, codes = await enrolled(sign_in, clock, "jo2fa@example.com")
    asked = (await jo.client.get("/account/delete")).text
    field = re.search(r'<input [^>]*name="second"[^>]*>', asked)
    assert field is not None and "inputmode" not in field.group(0)
    assert "Code from the app, or a recovery code" in asked
    done = await jo.post("/account/delete", {"password": PASSWORD, "second": codes[0]})
    assert done.status_code == 303 and done.headers["location"] == "/account/deleted"
    emails = [u.email for u in await db.read(users_admin.list_users)]
    assert "jo2fa@example.com" not in emails
