"""The dashboard's design holds in a real browser: axe-core finds nothing in either theme,
a phone gets a one-row header and short address cards, a wide screen never wraps an
address, one address's page has the list's switches (saved in place, or without script by
the form), and deleting or renaming the subdomain asks in a dialog (or, without script, on
a page)."""

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


def _switches(page: Page) -> tuple[str | None, str | None]:
    return (
        page.get_by_role("switch", name="Enabled").get_attribute("aria-checked"),
        page.get_by_role("switch", name="Block spam").get_attribute("aria-checked"),
    )


def test_one_address_switches_in_place(page: Page, site: Site) -> None:
    sign_in(page, site, BOB)
    with site.api(BOB) as api:
        made = api.post("/v3/relay/addresses").json()

        def current() -> tuple[bool, bool]:
            found = api.get(f"/v3/relay/addresses/{made['id']}").json()
            return found["enabled"], found["block_spam"]

        page.goto(f"{site.url}/addresses/{made['id']}")
        page.evaluate("window.stayed = true")  # gone if the page is loaded again
        enabled = page.get_by_role("switch", name="Enabled")
        spam = page.get_by_role("switch", name="Block spam")
        expect(enabled).to_have_text("Enabled")
        expect(spam).to_have_text("Not blocking spam")
        enabled.click()
        expect(enabled).to_have_attribute("aria-checked", "false")
        expect(enabled).to_have_text("Disabled")
        expect(page.locator("#status")).to_have_text("Saved")
        assert current() == (False, False)
        # The switches that came back work as the first ones did.
        spam.click()
        expect(spam).to_have_text("Blocking spam")
        enabled.click()
        expect(enabled).to_have_attribute("aria-checked", "true")
        assert current() == (True, True)
        assert _switches(page) == ("true", "true")
        assert page.evaluate("window.stayed") is True


def test_without_script_switches_post_the_form(browser: Browser, site: Site) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    sign_in(page, site, BOB)
    with site.api(BOB) as api:
        made = api.post("/v3/relay/addresses").json()
        here = f"{site.url}/addresses/{made['id']}"

        def current() -> tuple[bool, bool]:
            found = api.get(f"/v3/relay/addresses/{made['id']}").json()
            return found["enabled"], found["block_spam"]

        # In the list: the row's switch posts, and the list comes back.
        page.goto(site.url + "/")
        row = page.locator("tr", has=page.get_by_role("link", name=made["full_address"]))
        row.get_by_role("switch", name="Enabled").click()
        expect(page).to_have_url(site.url + "/")
        expect(row.get_by_role("switch", name="Enabled")).to_have_text("Disabled")
        assert current() == (False, False)
        # On the address's own page: the same switches, and this page comes back.
        page.goto(here)
        page.get_by_role("switch", name="Enabled").click()
        expect(page).to_have_url(here)
        expect(page.get_by_role("switch", name="Enabled")).to_have_text("Enabled")
        page.get_by_role("switch", name="Block spam").click()
        expect(page).to_have_url(here)
        expect(page.get_by_role("switch", name="Block spam")).to_have_text("Blocking spam")
        assert current() == (True, True)
        assert _switches(page) == ("true", "true")
    context.close()


def _bobs_subdomain(site: Site) -> tuple[str, int]:
    """Bob's subdomain (claimed if he has none), with a new address on it: its name and
    the address's id."""
    with site.api(BOB) as api:
        if not api.get("/v3/relay/subdomains").json():
            api.post("/v3/relay/subdomains", json={"subdomain": "bob-design"})
        name = str(api.get("/v3/relay/subdomains").json()[0]["subdomain"])
        api.put("/v3/relay/subdomains/use_subdomain", json={"use_relay_subdomain": True})
        made = api.post("/v3/relay/addresses").json()
        api.put("/v3/relay/subdomains/use_subdomain", json={"use_relay_subdomain": False})
    return name, int(made["id"])


def _renamed(site: Site, new: str, address_id: int) -> None:
    """The subdomain is ``new``, and the address on the old name is gone."""
    with site.api(BOB) as api:
        assert api.get("/v3/relay/subdomains").json()[0]["subdomain"] == new
        assert api.get(f"/v3/relay/addresses/{address_id}").status_code == 404


def _not_renamed(site: Site, old: str, address_id: int) -> None:
    with site.api(BOB) as api:
        assert api.get("/v3/relay/subdomains").json()[0]["subdomain"] == old
        assert api.get(f"/v3/relay/addresses/{address_id}").status_code == 200


def test_rename_asks_in_a_dialog(page: Page, site: Site) -> None:
    old, address_id = _bobs_subdomain(site)
    new, domain = old + "-2", ".relay.example.com"
    sign_in(page, site, BOB)
    page.goto(site.url + "/subdomain")
    page.get_by_label("New name").fill(new)
    opener = page.get_by_role("button", name="Rename", exact=True)
    opener.click()
    dialog = page.get_by_role("dialog", name=f"Rename {old}{domain} to {new}{domain}?")
    expect(dialog).to_be_visible()
    expect(dialog.locator(".warning")).to_contain_text("This deletes the 1 address")
    expect(dialog.get_by_role("link", name="Cancel")).to_be_focused()
    assert page.url == site.url + "/subdomain"
    assert violations(page) == []
    # Escape cancels: nothing changed, and the focus is back on Rename.
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    expect(opener).to_be_focused()
    _not_renamed(site, old, address_id)
    # Confirming renames, and deletes the address on the old name.
    opener.click()
    dialog.get_by_role("button", name="Rename and delete the addresses").click()
    expect(page.locator("#subdomain")).to_have_text(new + domain)
    _renamed(site, new, address_id)
    # A name the rules refuse is said on the page, as without script.
    page.get_by_label("New name").fill("Bad")
    opener.click()
    expect(page.get_by_role("alert")).to_contain_text("written in lower case")
    expect(page.get_by_role("dialog")).to_have_count(0)


def test_without_script_rename_asks_on_a_page(browser: Browser, site: Site) -> None:
    old, address_id = _bobs_subdomain(site)
    new, domain = old + "-3", ".relay.example.com"
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    sign_in(page, site, BOB)
    page.goto(site.url + "/subdomain")
    page.get_by_label("New name").fill(new)
    page.get_by_role("button", name="Rename", exact=True).click()
    heading = f"Rename {old}{domain} to {new}{domain}?"
    expect(page.get_by_role("heading", level=1)).to_have_text(heading)
    assert page.url.endswith("/rename"), page.url
    page.get_by_role("link", name="Cancel").click()
    expect(page.get_by_role("heading", name="Relay subdomain")).to_be_visible()
    _not_renamed(site, old, address_id)
    page.get_by_label("New name").fill(new)
    page.get_by_role("button", name="Rename", exact=True).click()
    page.get_by_role("button", name="Rename and delete the addresses").click()
    expect(page.locator("#subdomain")).to_have_text(new + domain)
    _renamed(site, new, address_id)
    context.close()
