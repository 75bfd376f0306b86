"""Browser fixtures: the real ``maskmail up`` per backend, Debian's chromium through
Playwright, and a check after every test that no request left the site's origin; for
the tests that read the mail a site sends, a sink smarthost and a site that mails to it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

from maskmail.mail.dkim import generate_key
from tests.dns_server import running_dns
from tests.sink import HOST, Received, Sink
from tests.support import BACKENDS, free_port, fresh_database, run_cli, running

CHROMIUM = "/usr/bin/chromium"
VENDOR = Path(__file__).with_name("vendor")
PASSWORD = "a long enough password"
USERS = ("ann@example.com", "bob@example.com")


@dataclass
class Site:
    url: str
    smtp_port: int
    # The Maildir the server sends to (no smarthost): forwards and verification messages.
    outbox: Path
    # The records the site's DNS server (on loopback) answers with; empty: NXDOMAIN.
    zone: dict[str, list[tuple[str, str]]]
    keys: dict[str, str] = field(default_factory=dict)
    # The server's environment, for running ``maskmail`` commands against it.
    env: dict[str, str] = field(default_factory=dict)

    def api(self, email: str) -> httpx.Client:
        """The API as that user's scripts see it."""
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.keys[email]}"}
        )


def _cli(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    result = run_cli(env, *args, stdin=stdin)
    assert result.returncode == 0, result.stderr
    return result.stdout


@contextmanager
def _off_the_loop(database: AbstractContextManager[str]) -> Iterator[str]:
    """Playwright's sync API keeps an event loop running on this thread, so the database
    helper (which uses asyncio.run) works from another one."""
    with ThreadPoolExecutor(1) as worker:
        url = worker.submit(database.__enter__).result()
        try:
            yield url
        finally:
            worker.submit(database.__exit__, None, None, None).result()


@pytest.fixture(scope="module", params=BACKENDS)
def site(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("site")
    zone: dict[str, list[tuple[str, str]]] = {}
    with _off_the_loop(fresh_database(request.param, tmp)) as url, running_dns(zone) as dns:
        env = {
            "MASKMAIL_DATABASE_URL": url,
            "MASKMAIL_DNS_RESOLVER": f"127.0.0.1:{dns}",
            "MASKMAIL_DATA_DIR": str(tmp / "var"),
            "MASKMAIL_DOMAIN": "relay.example.com",
            "MASKMAIL_RATE_LIMIT": "100000/minute",
            "MASKMAIL_SIGNIN_RATE_LIMIT": "1000/minute",
        }
        _cli(env, "db", "upgrade")
        keys = {}
        for email in USERS:
            _cli(env, "user", "add", email)
            _cli(env, "user", "password", email, stdin=PASSWORD + "\n")
            keys[email] = _cli(env, "key", "create", email).strip()
        api_port, smtp_port = free_port(), free_port()
        up = ("up", "--api-port", str(api_port), "--smtp-port", str(smtp_port))
        with running(env, *up, port=api_port, log=tmp / "up.log"):
            site_url = f"http://127.0.0.1:{api_port}"
            yield Site(site_url, smtp_port, tmp / "var" / "outbox", zone, keys, env)


@pytest.fixture(scope="module")
def sink() -> Iterator[Sink]:
    """The smarthost of a module's mailing sites ("the internet"), recording what arrives."""
    server = Sink(free_port())
    server.start()
    yield server
    server.stop()


@contextmanager
def mailing_site(backend: str, tmp: Path, sink: Sink, **settings: str) -> Iterator[Site]:
    """The real ``maskmail up`` on ``backend`` that sends its mail to ``sink``, signed with
    a DKIM key whose public half is ``tmp / "dkim.pub"``; ``settings`` are more
    ``MASKMAIL_*`` variables (``signup="invite"``)."""
    private, public = generate_key()
    (tmp / "dkim.key").write_bytes(private)
    (tmp / "dkim.pub").write_bytes(public)
    with _off_the_loop(fresh_database(backend, tmp)) as url:
        env = {
            "MASKMAIL_DATABASE_URL": url,
            "MASKMAIL_DATA_DIR": str(tmp / "var"),
            "MASKMAIL_DOMAIN": "relay.example.com",
            "MASKMAIL_SMARTHOST": f"{HOST}:{sink.port}",
            "MASKMAIL_DKIM_KEY_FILE": str(tmp / "dkim.key"),
            "MASKMAIL_RATE_LIMIT": "100000/minute",
        }
        env |= {f"MASKMAIL_{name.upper()}": value for name, value in settings.items()}
        _cli(env, "db", "upgrade")
        api_port, smtp_port = free_port(), free_port()
        up = ("up", "--api-port", str(api_port), "--smtp-port", str(smtp_port))
        with running(env, *up, port=api_port, log=tmp / "up.log"):
            url = f"http://127.0.0.1:{api_port}"
            yield Site(url, smtp_port, tmp / "var" / "outbox", {}, env=env)


def message_to(sink: Sink, recipient: str, subject: str) -> tuple[Received, EmailMessage]:
    """The newest message to ``recipient`` with ``subject`` that reached ``sink``, as
    sent and parsed (sent after the page answered, so it may take a moment)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for got in reversed(sink.messages):
            parsed = message_from_bytes(got.data, _class=EmailMessage, policy=policy.default)
            if recipient in got.rcpt_tos and parsed["Subject"] == subject:
                return got, parsed
        time.sleep(0.1)
    raise AssertionError(f"no message {subject!r} to {recipient} reached the smarthost")


# Per module, not per session: Playwright's sync API keeps an event loop running on this
# thread while it lives, and the tests after these (tests/conftest.py's database_url among
# them) call asyncio.run.
@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    # Root in a container has no user namespace for chromium's sandbox.
    launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
    yield launched
    launched.close()


@pytest.fixture
def page(browser: Browser, site: Site) -> Iterator[Page]:
    """A fresh browser profile; every request it makes must be to the site itself."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site.url)
    requested: list[str] = []
    context.on("request", lambda r: requested.append(r.url))
    tab = context.new_page()
    yield tab
    context.close()
    elsewhere = [u for u in requested if not u.startswith(site.url + "/")]
    assert elsewhere == [], f"requests left the origin: {elsewhere}"


def sign_in(page: Page, site: Site, email: str, password: str = PASSWORD) -> None:
    page.goto(site.url + "/")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.locator("header details.menu").wait_for()  # the menu: signed in


def serious_violations(page: Page) -> list[str]:
    """axe-core's serious and critical findings on the page as it is now."""
    page.evaluate((VENDOR / "axe.min.js").read_text())
    found = page.evaluate(
        "async () => (await axe.run(document)).violations"
        ".filter(v => v.impact === 'serious' || v.impact === 'critical')"
        ".map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).join(', '))"
    )
    return [str(v) for v in found]
