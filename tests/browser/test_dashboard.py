"""The dashboard in a real browser, each action checked through the API afterwards."""

from __future__ import annotations

import smtplib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import USERS, Site, serious_violations, sign_in
from tests.pgp_keys import keys
from tests.support import free_port

pytestmark = pytest.mark.slow
ANN, BOB = USERS


def _new_address(page: Page) -> str:
    page.get_by_role("button", name="New address").click()
    made = page.locator("#new-address")
    made.wait_for()
    return made.inner_text()


def _row(page: Page, address: str) -> Any:
    return page.locator("tr", has=page.get_by_role("link", name=address, exact=True))


def test_sign_in_and_out(page: Page, site: Site) -> None:
    page.goto(site.url + "/")
    page.get_by_label("Email").fill(ANN)
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("Wrong email or password.")
    sign_in(page, site, ANN)
    expect(page.get_by_role("heading", name="Addresses")).to_be_visible()
    cookie = next(c for c in page.context.cookies() if c["name"] == "maskmail_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax"
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    page.goto(site.url + "/keys")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()


def test_address_actions_show_in_the_api(page: Page, site: Site) -> None:
    sign_in(page, site, ANN)
    address = _new_address(page)
    with site.api(ANN) as api:
        listed = {a["full_address"]: a for a in api.get("/v3/relay/addresses").json()}
        assert address in listed
        address_id = listed[address]["id"]

        def current() -> Any:
            return api.get(f"/v3/relay/addresses/{address_id}").json()

        row = _row(page, address)
        # The new address is the first row, and Copy puts it on the clipboard.
        expect(page.locator("tbody tr").first).to_contain_text(address)
        page.get_by_role("button", name=f"Copy {address}").first.click()
        assert page.evaluate("navigator.clipboard.readText()") == address
        # Description: saved on Enter, then on leaving the field.
        description = row.get_by_label("Description")
        description.fill("newsletter")
        description.press("Enter")
        expect(page.locator("#status")).to_have_text("Saved")
        assert current()["description"] == "newsletter"
        description.fill("newsletter 2")
        description.press("Tab")
        expect(page.locator("#status")).to_have_text("Saved")
        assert current()["description"] == "newsletter 2"
        # The two switches.
        row.get_by_role("switch", name="Enabled").click()
        expect(row.get_by_role("switch", name="Enabled")).to_have_attribute("aria-checked", "false")
        row.get_by_role("switch", name="Block spam").click()
        expect(row.get_by_role("switch", name="Block spam")).to_have_attribute(
            "aria-checked", "true"
        )
        assert (current()["enabled"], current()["block_spam"]) == (False, True)
        # Search by description, then delete with confirmation.
        page.get_by_label("Search").fill("newsletter 2")
        page.get_by_role("button", name="Find").click()
        expect(page.locator("tbody tr")).to_have_count(1)
        row.get_by_role("button", name="Delete").click()
        dialog = page.get_by_role("dialog")
        expect(dialog.get_by_role("heading")).to_contain_text("Delete")
        assert current()["id"] == address_id  # asking is not deleting
        dialog.get_by_role("button", name="Delete").click()
        expect(page.get_by_role("heading", name="Addresses")).to_be_visible()
        assert api.get(f"/v3/relay/addresses/{address_id}").status_code == 404


def test_keyboard_alone_creates_and_switches(page: Page, site: Site) -> None:
    page.goto(site.url + "/")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    # Skipping passes the header (its logo links home) and lands on the form.
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    expect(page.get_by_label("Email")).to_be_focused()
    page.keyboard.type(ANN)
    page.keyboard.press("Tab")
    page.keyboard.type("a long enough password")
    page.keyboard.press("Enter")
    page.get_by_role("button", name="New address").focus()
    page.keyboard.press("Enter")
    address = page.locator("#new-address").inner_text()
    switch = _row(page, address).get_by_role("switch", name="Enabled")
    switch.focus()
    page.keyboard.press("Space")
    expect(switch).to_have_attribute("aria-checked", "false")
    with site.api(ANN) as api:
        found = [a for a in api.get("/v3/relay/addresses").json() if a["full_address"] == address]
    assert found and found[0]["enabled"] is False


def test_contact_activity_and_keys(page: Page, site: Site) -> None:
    sign_in(page, site, ANN)
    address = _new_address(page)
    with smtplib.SMTP("127.0.0.1", site.smtp_port, timeout=30) as smtp:
        note = f"From: <pat@example.org>\r\nTo: {address}\r\nSubject: hi\r\n\r\nHi.\r\n"
        smtp.sendmail("pat@example.org", [address], note.encode())
    page.get_by_role("link", name=address, exact=True).click()
    expect(page.locator(".legend")).to_contain_text("Forwarded: 1")
    address_id = int(page.url.rsplit("/", 1)[1])
    page.get_by_label("Contact's email").fill("Shop@Example.org")
    page.get_by_role("button", name="Write to a new contact").click()
    alias = page.locator("#reverse-alias").inner_text()
    with site.api(ANN) as api:
        again = api.post(
            f"/v3/relay/addresses/{address_id}/contacts", json={"email": "shop@example.org"}
        ).json()
        assert again["reverse_alias"] == alias
    page.get_by_role("link", name="Activity").click()
    expect(page.locator("svg.chart")).to_be_visible()
    assert int(page.locator(".legend li").first.inner_text().split(": ")[1]) >= 1
    page.get_by_role("link", name="API keys").click()
    page.get_by_role("button", name="Create key").click()
    key = page.locator("#new-key").inner_text()
    site.keys["new"] = key
    with site.api("new") as api:
        assert api.get("/v3/relay/addresses").status_code == 200
        page.goto(site.url + "/keys")
        expect(page.locator("#new-key")).to_have_count(0)
        page.get_by_role("button", name=f"Revoke {key[:12]}…").click()
        assert api.get("/v3/relay/addresses").status_code == 401


def test_another_user_sees_none_of_them(page: Page, site: Site) -> None:
    with site.api(ANN) as api:
        made = api.post("/v3/relay/addresses").json()
    sign_in(page, site, BOB)
    expect(page.get_by_text(made["full_address"])).to_have_count(0)
    answer = page.goto(f"{site.url}/addresses/{made['id']}")
    assert answer is not None and answer.status == 404
    page.goto(f"{site.url}/?q={made['address']}")
    expect(page.locator("tbody tr")).to_have_count(0)


@pytest.fixture
def other_site(site: Site) -> Iterator[str]:
    """A page on another origin with a form that posts to the dashboard."""
    form = (
        f'<form method="post" action="{site.url}/addresses">'
        '<input name="csrf" value="guess"><button>Win a prize</button></form>'
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(form)

        def log_message(self, *args: object) -> None:
            return

    server = HTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    server.server_close()


def test_cross_site_form_post_is_refused(browser: Browser, site: Site, other_site: str) -> None:
    context = browser.new_context()
    page = context.new_page()
    sign_in(page, site, BOB)
    with site.api(BOB) as api:
        before = len(api.get("/v3/relay/addresses").json())
        page.goto(other_site)
        with page.expect_navigation() as navigation:
            page.get_by_role("button", name="Win a prize").click()
        response = navigation.value
        assert response is not None and response.status == 403
        assert len(api.get("/v3/relay/addresses").json()) == before
    context.close()


PAGES = (
    "/",
    "/mailboxes",
    "/subdomain",
    "/domains",
    "/activity",
    "/keys",
    "/help/clients",
    "/password",
)


def test_axe_finds_nothing_serious(page: Page, site: Site) -> None:
    page.goto(site.url + "/")
    assert serious_violations(page) == []
    sign_in(page, site, ANN)
    _new_address(page)
    paths = [*PAGES, page.locator("tbody tr a.address").first.get_attribute("href") or ""]
    paths.append(paths[-1] + "/delete")
    # The error page too: an id that names nothing.
    paths.append("/addresses/999999999")
    for path in paths:
        page.goto(site.url + path)
        assert serious_violations(page) == [], path


def test_readable_at_375_px(page: Page, site: Site) -> None:
    page.set_viewport_size({"width": 375, "height": 800})
    with site.api(ANN) as api:
        # The widest states: a mailbox waiting for its code, a claimed subdomain, a
        # domain with its records (a DKIM key hundreds of characters long), a PGP key.
        api.post("/v3/relay/mailboxes", json={"email": "ann.long.mailbox.name@example.net"})
        if not api.get("/v3/relay/subdomains").json():
            api.post("/v3/relay/subdomains", json={"subdomain": "ann-has-a-long-subdomain"})
        api.post("/v3/relay/domains", json={"domain": "ann-has-a-long-domain-name.example"})
        mailbox = next(m for m in api.get("/v3/relay/mailboxes").json() if m["email"] == ANN)
        api.put(f"/v3/relay/mailboxes/{mailbox['id']}/pgp", json={"public_key": keys().good})
    sign_in(page, site, ANN)
    _new_address(page)
    for path in PAGES:
        page.goto(site.url + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375, (path, width)
