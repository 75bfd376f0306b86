"""The dashboard's design holds in a real browser: axe-core finds nothing in either theme,
a phone gets a one-row header and short address cards, a wide screen never wraps an
address, and deleting asks in a dialog (or, without script, on a page)."""

from __future__ import annotations

import re
from typing import Literal

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import USERS, VENDOR, Site, sign_in
from tests.browser.test_dashboard import PAGES

pytestmark = pytest.mark.slow
ANN, BOB = USERS


def violations(page: Page) -> list[str]:
    """Every axe-core finding on the page as it is now, whatever its impact."""
    page.evaluate((VENDOR / "axe.min.js").read_text())
    found = page.evaluate(
        "async () => (await axe.run(document)).violations"
        ".map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).join(', '))"
    )
    return [str(v) for v in found]


def _new_address(page: Page) -> str:
    page.get_by_role("button", name="New address").click()
    made = page.locator("#new-address")
    made.wait_for()
    return made.inner_text()


def _fill_the_account(site: Site) -> None:
    """Something on every page: addresses, a mailbox waiting, a subdomain, a domain."""
    with site.api(ANN) as api:
        for _ in range(3):
            api.post("/v3/relay/addresses")
        api.post("/v3/relay/mailboxes", json={"email": "ann.design@example.net"})
        if not api.get("/v3/relay/subdomains").json():
            api.post("/v3/relay/subdomains", json={"subdomain": "ann-design"})
        if not api.get("/v3/relay/domains").json():
            api.post("/v3/relay/domains", json={"domain": "ann-design.example"})


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_axe_finds_nothing_in_either_theme(
    page: Page, site: Site, theme: Literal["light", "dark"]
) -> None:
    page.emulate_media(color_scheme=theme)
    page.goto(site.url + "/")
    assert violations(page) == [], "/"
    _fill_the_account(site)
    sign_in(page, site, ANN)
    first = page.locator("tbody tr a.address").first.get_attribute("href") or ""
    for path in (*PAGES, first, first + "/delete", "/addresses/999999999"):
        page.goto(site.url + path)
        assert violations(page) == [], (theme, path)
    # The open menu at 375 px, and the dialog that asks.
    page.set_viewport_size({"width": 375, "height": 800})
    page.goto(site.url + "/")
    page.get_by_text("Menu").click()
    assert violations(page) == [], (theme, "menu")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(site.url + "/")
    page.locator("tbody tr").first.get_by_role("button", name="Delete").click()
    expect(page.get_by_role("dialog")).to_be_visible()
    assert violations(page) == [], (theme, "dialog")


def test_a_phone_gets_a_short_header_and_short_cards(page: Page, site: Site) -> None:
    _fill_the_account(site)
    page.set_viewport_size({"width": 375, "height": 800})
    sign_in(page, site, ANN)
    for path in PAGES:
        page.goto(site.url + path)
        assert page.evaluate("document.documentElement.scrollWidth") <= 375, path
        header = page.locator("header").bounding_box()
        assert header is not None and header["height"] <= 64, (path, header)
    page.goto(site.url + "/")
    cards = page.locator("tbody tr")
    assert cards.count() >= 3
    for n in range(cards.count()):
        box = cards.nth(n).bounding_box()
        assert box is not None and box["height"] <= 160, (n, box)
    # The pages are in a menu, which says where you are.
    nav = page.get_by_role("navigation", name="Dashboard")
    expect(nav).to_be_hidden()
    page.get_by_text("Menu").click()
    expect(nav.get_by_role("link", name="Addresses")).to_have_attribute("aria-current", "page")
    nav.get_by_role("link", name="Domains").click()
    expect(page.get_by_role("heading", name="Custom domains")).to_be_visible()


def test_a_wide_screen_never_wraps_an_address(page: Page, site: Site) -> None:
    _fill_the_account(site)
    with site.api(ANN) as api:
        # The longest kind: an address on a long subdomain, with a full description.
        api.put("/v3/relay/subdomains/use_subdomain", json={"use_relay_subdomain": True})
        made = api.post("/v3/relay/addresses").json()
        api.patch(f"/v3/relay/addresses/{made['id']}", json={"description": "d" * 64})
        api.put("/v3/relay/subdomains/use_subdomain", json={"use_relay_subdomain": False})
    sign_in(page, site, ANN)
    expect(page.get_by_role("navigation", name="Dashboard")).to_be_visible()
    lines = page.eval_on_selector_all(
        "tbody a.address", "links => links.map(a => a.getClientRects().length)"
    )
    assert lines and set(lines) == {1}, lines
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    # A switch says its state in words as well as by its position.
    row = page.locator("tbody tr").first
    expect(row.get_by_role("switch", name="Block spam")).to_have_text("Not blocking spam")


def test_delete_asks_in_a_dialog(page: Page, site: Site) -> None:
    sign_in(page, site, BOB)
    address = _new_address(page)
    row = page.locator("tr", has=page.get_by_role("link", name=address, exact=True))
    opener = row.get_by_role("button", name=f"Delete {address}")
    opener.click()
    dialog = page.get_by_role("dialog", name=f"Delete {address}?")
    expect(dialog).to_be_visible()
    # The safe choice has the focus, and Tab goes round the dialog's own controls.
    expect(dialog.get_by_role("link", name="Cancel")).to_be_focused()
    for _ in range(3):
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.closest('dialog') !== null")
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.closest('dialog') !== null")
    # Escape cancels, and the focus is back where it was.
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    expect(opener).to_be_focused()
    # So does Cancel; then Delete deletes.
    opener.click()
    page.get_by_role("dialog").get_by_role("link", name="Cancel").click()
    expect(page.get_by_role("dialog")).to_have_count(0)
    with site.api(BOB) as api:
        assert address in {a["full_address"] for a in api.get("/v3/relay/addresses").json()}
        opener.click()
        page.get_by_role("dialog").get_by_role("button", name="Delete").click()
        expect(page.get_by_role("link", name=address, exact=True)).to_have_count(0)
        assert address not in {a["full_address"] for a in api.get("/v3/relay/addresses").json()}


def test_without_script_delete_asks_on_a_page(browser: Browser, site: Site) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    sign_in(page, site, BOB)
    page.get_by_role("button", name="New address").click()
    address = page.locator("#new-address").inner_text()
    page.get_by_role("button", name=f"Delete {address}").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Delete {address}?")
    assert re.search(r"/addresses/\d+/delete\??$", page.url), page.url
    page.get_by_role("link", name="Cancel").click()
    expect(page.get_by_role("heading", name="Addresses", exact=True)).to_be_visible()
    page.get_by_role("button", name=f"Delete {address}").click()
    page.get_by_role("button", name="Delete", exact=True).click()
    expect(page.get_by_role("link", name=address, exact=True)).to_have_count(0)
    # The menu opens without script too.
    page.set_viewport_size({"width": 375, "height": 800})
    page.get_by_text("Menu").click()
    expect(page.get_by_role("link", name="Mailboxes")).to_be_visible()
    context.close()
