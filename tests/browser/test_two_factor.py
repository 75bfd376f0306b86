"""Two-factor sign-in in a real browser (issue 24 item 3): an authenticator app set up
and used, and a security key registered and used through Chrome DevTools' virtual
authenticator. The site is opened at ``localhost``: WebAuthn's relying party is a host
name, and browsers refuse an IP address."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyotp
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import PASSWORD, USERS, Site, serious_violations

pytestmark = pytest.mark.slow
ANN, BOB = USERS


@dataclass
class Tab:
    page: Page
    url: str


@pytest.fixture
def tab(browser: Browser, site: Site) -> Iterator[Tab]:
    """A fresh profile at http://localhost:PORT; every request stays on that origin."""
    url = site.url.replace("127.0.0.1", "localhost")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    requested: list[str] = []
    context.on("request", lambda r: requested.append(r.url))
    page = context.new_page()
    yield Tab(page, url)
    context.close()
    elsewhere = [u for u in requested if not u.startswith(url + "/")]
    assert elsewhere == [], f"requests left the origin: {elsewhere}"


def _password_step(tab: Tab, email: str) -> None:
    tab.page.goto(tab.url + "/")
    tab.page.get_by_label("Email").fill(email)
    tab.page.get_by_label("Password").fill(PASSWORD)
    tab.page.get_by_role("button", name="Sign in").click()


def _sign_out(tab: Tab) -> None:
    tab.page.get_by_role("button", name="Sign out").click()
    expect(tab.page.get_by_role("heading", name="Sign in to maskmail")).to_be_visible()


def _no_serious_violations(page: Page) -> None:
    assert serious_violations(page) == [], page.url


def test_an_authenticator_app_set_up_and_signed_in_with(tab: Tab) -> None:
    page = tab.page
    _password_step(tab, BOB)
    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Two-factor").click()
    expect(page.get_by_text("API keys are not affected")).to_be_visible()
    _no_serious_violations(page)
    page.get_by_role("button", name="Set up an authenticator app").click()
    expect(
        page.get_by_role("img", name="QR code of the authenticator app's setup link")
    ).to_be_visible()
    _no_serious_violations(page)
    app = pyotp.TOTP(page.locator("#totp-secret").inner_text())
    page.get_by_label("Code from the app").fill(app.now())
    page.get_by_role("button", name="Turn on").click()
    expect(page.get_by_role("heading", name="Your recovery codes")).to_be_visible()
    assert page.locator("#recovery-codes li").count() == 10
    _no_serious_violations(page)
    page.get_by_role("link", name="Done").click()
    expect(page.locator("#two-factor-state")).to_have_text("on")
    _sign_out(tab)
    _password_step(tab, BOB)
    expect(page.get_by_role("heading", name="Second step")).to_be_visible()
    _no_serious_violations(page)
    # The enrolment's code is spent: the next step's (within the window) signs in.
    page.get_by_label("Code from your authenticator app").fill(app.at(time.time() + 30))
    page.get_by_role("button", name="Continue").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()


def test_a_security_key_registered_and_signed_in_with(tab: Tab) -> None:
    page = tab.page
    devtools = page.context.new_cdp_session(page)
    devtools.send("WebAuthn.enable")
    devtools.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "usb",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    _password_step(tab, ANN)
    page.goto(tab.url + "/two-factor")
    page.get_by_label("Name of the key").fill("Virtual key")
    page.get_by_role("button", name="Add a security key").click()
    expect(page.get_by_role("heading", name="Add the security key")).to_be_visible()
    _no_serious_violations(page)
    page.get_by_role("button", name="Touch the key").click()
    # The first second factor: the recovery codes, shown once.
    expect(page.get_by_role("heading", name="Your recovery codes")).to_be_visible()
    page.get_by_role("link", name="Done").click()
    expect(page.get_by_role("cell", name="Virtual key", exact=True)).to_be_visible()
    expect(page.locator("#two-factor-state")).to_have_text("on")
    _sign_out(tab)
    _password_step(tab, ANN)
    expect(page.get_by_role("heading", name="Second step")).to_be_visible()
    page.get_by_role("button", name="Use a security key or passkey").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    page.goto(tab.url + "/two-factor")
    row = page.locator("tr", has=page.get_by_role("cell", name="Virtual key", exact=True))
    expect(row).not_to_contain_text("never")
