"""Each client's exact request against the real ``maskmail serve``.

The requests copy what the clients' code sends (see docs/clients.md for the sources):
headers, body, query and base URL, with a trailing slash where a user could type one.
http.client sends the request target byte for byte and never follows a redirect, so
any 3xx fails the status check, as it does for Bitwarden's ``redirect: "manual"``.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest

from maskmail.core import keys
from maskmail.store import accounts
from maskmail.store.engine import create_engine, transaction
from maskmail.store.migrate import upgrade
from tests.support import BACKENDS, free_port, fresh_database, running

pytestmark = pytest.mark.slow

DOMAIN = "relay.e2e.test"
MAILBOX = "owner@example.net"
LIMITED = "limited@example.net"
LIMIT = 25  # per user; the other tests create far fewer for MAILBOX
EXTENSION_ORIGIN = "chrome-extension://nngceckbapebfimnlniiiahkandclblb"


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: Any


@dataclass
class Server:
    port: int
    key: str
    limited_key: str

    def url(self, suffix: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{suffix}"


def send(method: str, url: str, headers: dict[str, str], body: bytes | None = None) -> Reply:
    """One request exactly as given: the path is not normalised, nothing is added."""
    parts = urlsplit(url)
    target = url[url.index(parts.netloc) + len(parts.netloc) :]
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        conn.putrequest(method, target, skip_host=False, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        if body is not None or method == "POST":
            conn.putheader("Content-Length", str(len(body or b"")))
        conn.endheaders(body)
        response = conn.getresponse()
        raw = response.read()
        found = {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()
    parsed = json.loads(raw) if raw and "json" in found.get("content-type", "") else raw
    return Reply(response.status, found, parsed)


async def make_keys(url: str, *mailboxes: str) -> list[str]:
    """A user and an API key for each mailbox, committed."""
    engine = create_engine(url, pool_size=1)
    made = []
    try:
        async with transaction(engine) as conn:
            for mailbox in mailboxes:
                key = keys.generate_key()
                await accounts.add_key(
                    conn, await accounts.add_user(conn, mailbox), keys.hash_key(key)
                )
                made.append(key)
    finally:
        await engine.dispose()
    return made


@pytest.fixture(scope="module", params=BACKENDS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("e2e-clients")
    with fresh_database(request.param, tmp) as url:
        env = {
            "MASKMAIL_DATABASE_URL": url,
            "MASKMAIL_DATA_DIR": str(tmp),
            "MASKMAIL_DOMAIN": DOMAIN,
            "MASKMAIL_MAX_ADDRESSES_PER_USER": str(LIMIT),
        }
        # Users and keys are made in-process: a CLI process each would triple start-up.
        upgrade(url)
        made = asyncio.run(make_keys(url, MAILBOX, LIMITED))
        port = free_port()
        with running(env, "serve", "--port", str(port), port=port, log=tmp / "serve.log"):
            yield Server(port=port, key=made[0], limited_key=made[1])


def listed(server: Server, key: str | None = None) -> dict[str, dict[str, Any]]:
    reply = send(
        "GET",
        server.url("/v3/relay/addresses"),
        {"Authorization": f"Bearer {key or server.key}", "Accept": "application/json"},
    )
    assert reply.status == 200
    return {a["full_address"]: a for a in reply.body}


def assert_address(email: object) -> str:
    assert isinstance(email, str)
    assert re.fullmatch(rf"[a-z0-9]{{8}}@{re.escape(DOMAIN)}", email)
    return email


def assert_preflight(server: Server, url: str, method: str, headers: str) -> None:
    reply = send(
        "OPTIONS",
        url,
        {
            "Origin": EXTENSION_ORIGIN,
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": headers,
        },
    )
    assert reply.status == 200
    assert reply.headers["access-control-allow-origin"] == "*"
    allowed = reply.headers["access-control-allow-headers"].lower()
    assert all(h in allowed for h in headers.split(","))


def test_bitwarden_addy_io_forwarder(server: Server) -> None:
    # libs/tools/generator: url = baseUrl + "/api/v1/aliases"; a base URL typed with a
    # trailing slash gives "//api". The headers are authenticate() plus the RPC's own.
    base = server.url("/")
    url = base + "/api/v1/aliases"
    assert_preflight(server, url, "POST", "authorization,content-type,accept")
    note = "Website: accounts.example.com. Generated by Bitwarden."
    reply = send(
        "POST",
        url,
        {
            "Authorization": f"Bearer {server.key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Origin": EXTENSION_ORIGIN,
        },
        json.dumps({"domain": DOMAIN, "description": note}).encode(),
    )
    assert reply.status in {200, 201}  # hasJsonPayload
    assert reply.status == 201
    assert reply.headers["access-control-allow-origin"] == "*"
    email = assert_address(reply.body["data"]["email"])  # processJson: json?.data?.email
    assert listed(server)[email]["description"] == note


def test_bitwarden_addy_io_errors_are_read_from_message(server: Server) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    bad_key = send(
        "POST",
        server.url("//api/v1/aliases"),
        {**headers, "Authorization": "Bearer mm_live_wrong"},
        b"{}",
    )
    assert bad_key.status == 401
    assert set(bad_key.body) == {"message"}
    unknown = send(
        "POST",
        server.url("//api/v1/aliases"),
        {**headers, "Authorization": f"Bearer {server.key}"},
        json.dumps({"domain": "anonaddy.me", "description": "x"}).encode(),
    )
    assert unknown.status == 422
    assert DOMAIN in unknown.body["message"]


@pytest.mark.parametrize(
    "website",
    ["login.example.co.uk:8443", "https://stabilityai.us.auth0.com"],
    ids=["extension", "mobile-full-url"],
)
def test_bitwarden_simplelogin_forwarder(server: Server, website: str) -> None:
    # url = baseUrl + "/api/alias/random/new" + "?hostname=" + website, not encoded;
    # headers { Authentication: token }, Content-Type and Accept; body { note }. The
    # mobile app sends the site's whole URL (bitwarden/android#4225).
    url = server.url("/") + "/api/alias/random/new?hostname=" + website
    assert_preflight(server, url, "POST", "authentication,content-type,accept")
    note = f"Website: {website}. Generated by Bitwarden."
    reply = send(
        "POST",
        url,
        {
            "Authentication": server.key,
            "Content-Type": "application/json",
            "Accept": "application/json",
        },
        json.dumps({"note": note}).encode(),
    )
    assert reply.status == 201
    email = assert_address(reply.body["alias"])  # processJson: json?.alias
    assert listed(server)[email]["description"] == note[:64]  # cut, never refused


def test_bitwarden_simplelogin_errors_are_read_from_error(server: Server) -> None:
    reply = send(
        "POST",
        server.url("//api/alias/random/new"),
        {"Authentication": "wrong", "Content-Type": "application/json"},
        b'{"note": "x"}',
    )
    assert reply.status == 401
    assert set(reply.body) == {"error"}


def test_keyguard_simplelogin_with_empty_body(server: Server) -> None:
    # Keyguard (ktor): baseUrl.ensureSuffix("/") + "api/alias/random/new", header
    # Authentication, parameters hostname and mode, and no body or Content-Type at all.
    url = server.url("/") + "api/alias/random/new?hostname=shop.example.org&mode=uuid"
    reply = send(
        "POST", url, {"Authentication": server.key, "Accept": "*/*", "User-Agent": "Ktor client"}
    )
    assert reply.status == 201
    email = assert_address(reply.body["alias"])
    assert listed(server)[email]["description"] == "shop.example.org"


def test_keyguard_addy_io(server: Server) -> None:
    # Keyguard: baseUrl.ensureSuffix("/") + "api/v1/aliases"; description is the host or null.
    reply = send(
        "POST",
        server.url("/") + "api/v1/aliases",
        {"Authorization": f"Bearer {server.key}", "Content-Type": "application/json"},
        json.dumps({"domain": DOMAIN, "description": None}).encode(),
    )
    assert reply.status == 201
    assert_address(reply.body["data"]["email"])


@pytest.mark.parametrize("base_suffix", ["", "/"], ids=["no-slash", "trailing-slash"])
def test_addy_io_extension_domain_options_then_create(server: Server, base_suffix: str) -> None:
    instance = server.url(base_suffix)
    headers = {
        "Content-Type": "application/json",
        "X-Requested-With": "XMLHttpRequest",
        "Authorization": f"Bearer {server.key}",
        "Origin": EXTENSION_ORIGIN,
    }
    assert_preflight(
        server,
        f"{instance}/api/v1/domain-options",
        "GET",
        "authorization,content-type,x-requested-with",
    )
    options = send("GET", f"{instance}/api/v1/domain-options", headers)
    assert options.status == 200
    assert options.body["data"] == [DOMAIN]
    domain = options.body["defaultAliasDomain"]
    alias_format = options.body["defaultAliasFormat"]
    assert domain in options.body["data"]
    assert alias_format == "random_characters"
    assert_preflight(
        server,
        f"{instance}/api/v1/aliases",
        "POST",
        "authorization,content-type,x-requested-with,x-requested-from",
    )
    created = send(
        "POST",
        f"{instance}/api/v1/aliases",
        {**headers, "X-Requested-From": "browser-extension"},
        json.dumps(
            {
                "domain": domain,
                "local_part": "",
                "description": "news.example.com",
                "format": alias_format,
                "recipient_ids": [],
            }
        ).encode(),
    )
    assert created.status == 201  # the extension accepts nothing else
    data = created.body["data"]  # it then reads data.data.email
    email = assert_address(data["email"])
    assert data["local_part"] + "@" + data["domain"] == email
    assert listed(server)[email]["description"] == "news.example.com"


def test_under_a_prefix_behind_a_proxy(server: Server) -> None:
    # A proxy on 127.0.0.1 (trusted by default) that keeps /relay in the path.
    reply = send(
        "POST",
        server.url("/relay//api/alias/random/new?hostname=example.com"),
        {"Authentication": server.key, "X-Forwarded-Prefix": "/relay"},
    )
    assert reply.status == 201
    assert_address(reply.body["alias"])


def test_limit_holds_under_concurrent_creates_through_both_contracts(server: Server) -> None:
    key = server.limited_key
    addy = (
        server.url("//api/v1/aliases"),
        {"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        b'{"description": "concurrent"}',
    )
    simplelogin = (
        server.url("//api/alias/random/new?hostname=concurrent.example"),
        {"Authentication": key},
        None,
    )
    attempts = [addy, simplelogin] * ((LIMIT + 6) // 2 + 1)
    with ThreadPoolExecutor(max_workers=8) as pool:
        replies = list(pool.map(lambda a: (a, send("POST", *a)), attempts))
    created = [r for _, r in replies if r.status == 201]
    refused = [(a, r) for a, r in replies if r.status != 201]
    assert len(created) == LIMIT
    assert len(refused) == len(attempts) - LIMIT
    for attempt, reply in refused:
        assert reply.status == 403
        field = "message" if attempt is addy else "error"
        assert set(reply.body) == {field}
        assert f"limit of {LIMIT}" in reply.body[field]
    assert len(listed(server, key)) == LIMIT
