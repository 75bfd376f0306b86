"""Guessing a dashboard password: the same argon2 work whether or not the account exists,
one throttle for /sign-in and /password, counted per client behind the proxy."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import argon2
import pytest
from fastapi import FastAPI

from maskmail.core import passwords
from maskmail.store import accounts, sessions
from tests.api.conftest import client_for, make_settings, started_app
from tests.web.conftest import PASSWORD, Db, Person, add_person

pytestmark = pytest.mark.anyio
NEW = "a brand new password"


async def test_the_same_verification_runs_for_any_wrong_part(
    app: FastAPI, db: Db, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unknown account, one without a password and a wrong password each cost one
    argon2 verification, with the parameters real hashes have."""
    tag = secrets.token_hex(4)
    await db.write(add_person, f"has{tag}@example.com")
    await db.write(accounts.add_user, f"none{tag}@example.com")
    verified: list[argon2.Parameters] = []
    real = argon2.PasswordHasher.verify

    def counted(self: argon2.PasswordHasher, hash: str | bytes, password: str | bytes) -> bool:
        verified.append(argon2.extract_parameters(hash if isinstance(hash, str) else hash.decode()))
        return real(self, hash, password)

    monkeypatch.setattr(argon2.PasswordHasher, "verify", counted)
    expected = argon2.extract_parameters(passwords.hash_password(PASSWORD))
    cases = {
        "unknown account": (f"nobody{tag}@example.com", PASSWORD),
        "no password": (f"none{tag}@example.com", PASSWORD),
        "wrong password": (f"has{tag}@example.com", "not the password"),
        "no email": ("", PASSWORD),
    }
    counts = {}
    async with client_for(app) as client:
        for case, (email, password) in cases.items():
            before = len(verified)
            answer = await client.post("/sign-in", data={"email": email, "password": password})
            assert answer.status_code == 401, case
            counts[case] = len(verified) - before
    assert counts == dict.fromkeys(cases, 1)
    assert verified == [expected] * len(cases)


@asynccontextmanager
async def signed_in(app: FastAPI, email: str, peer: str) -> AsyncIterator[Person]:
    async with client_for(app, peer=(peer, 1)) as client:
        answer = await client.post("/sign-in", data={"email": email, "password": PASSWORD})
        assert answer.status_code == 303, answer.text
        yield Person(email, 0, client)


def change(current: str) -> dict[str, str]:
    return {"current": current, "new": NEW, "again": NEW}


async def test_password_guesses_are_throttled_per_account(database_url: str, db: Db) -> None:
    """Wrong current passwords use the account's sign-in budget: then neither the right
    one at /password nor a sign-in from anywhere else is tried."""
    settings = make_settings(database_url, signin_rate_limit="3/hour")
    email = f"pat{secrets.token_hex(4)}@example.com"
    user_id = await db.write(add_person, email)
    async with started_app(settings) as app, signed_in(app, email, "10.4.0.1") as pat:
        codes = [(await pat.post("/password", change("guess"))).status_code for _ in range(3)]
        refused = await pat.post("/password", change(PASSWORD))
        async with client_for(app, peer=("10.4.0.2", 1)) as elsewhere:
            sign_in = await elsewhere.post("/sign-in", data={"email": email, "password": PASSWORD})
    assert codes == [422, 422, 422]
    assert refused.status_code == 429 and "Too many attempts" in refused.text
    assert sign_in.status_code == 429
    account = await db.read(sessions.account_for_user, user_id)
    assert passwords.verify(account.password_hash, PASSWORD)


async def test_password_guesses_are_throttled_per_client(database_url: str, db: Db) -> None:
    """Failed sign-ins from a client count at /password from that client too."""
    settings = make_settings(database_url, signin_rate_limit="3/hour")
    tag = secrets.token_hex(4)
    email = f"quin{tag}@example.com"
    await db.write(add_person, email)
    async with started_app(settings) as app, signed_in(app, email, "10.5.0.1") as quin:
        for n in range(3):
            wrong = {"email": f"x{n}{tag}@example.com", "password": "no"}
            assert (await quin.client.post("/sign-in", data=wrong)).status_code == 401
        refused = await quin.post("/password", change(PASSWORD))
    assert refused.status_code == 429


async def test_clients_behind_the_proxy_are_throttled_apart(database_url: str, db: Db) -> None:
    """Every request comes from the proxy's address; the failures of the client it
    forwards for do not lock out the others, and the header the guesser writes itself
    does not make it someone else."""
    settings = make_settings(database_url, signin_rate_limit="3/hour")
    tag = secrets.token_hex(4)
    email = f"ray{tag}@example.com"
    await db.write(add_person, email)

    def via_proxy(client: str, written: str = "") -> dict[str, str]:
        return {"X-Forwarded-For": f"{written}, {client}" if written else client}

    async with started_app(settings) as app, client_for(app, peer=("127.0.0.1", 1)) as proxy:
        for n in range(3):
            wrong = {"email": f"y{n}{tag}@example.com", "password": "no"}
            answer = await proxy.post("/sign-in", data=wrong, headers=via_proxy("198.51.100.7"))
            assert answer.status_code == 401
        right = {"email": email, "password": PASSWORD}
        again = await proxy.post(
            "/sign-in", data=right, headers=via_proxy("198.51.100.7", "203.0.113.50")
        )
        other = await proxy.post("/sign-in", data=right, headers=via_proxy("198.51.100.8"))
    assert again.status_code == 429
    assert other.status_code == 303
