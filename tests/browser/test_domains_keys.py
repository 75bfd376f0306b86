"""The Domains page and the mailbox key form in a real browser (issue 16 item 8): each
action checked through the API afterwards, the copy buttons through the clipboard, and
axe-core on every state; and the client guide a person reaches from the API keys page."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.api.test_domains import publish
from tests.browser.conftest import USERS, Site, serious_violations, sign_in
from tests.pgp_keys import keys

pytestmark = pytest.mark.slow
ANN, _ = USERS


def _no_serious_violations(page: Page) -> None:
    assert serious_violations(page) == [], page.url


def test_domain_records_copy_check_and_delete(page: Page, site: Site) -> None:
    sign_in(page, site, ANN)
    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Domains").click()
    page.get_by_label("Domain to add").fill("shop.example")
    page.get_by_role("button", name="Add domain").click()
    expect(page.get_by_role("heading", name="shop.example")).to_be_visible()
    expect(page.get_by_text("Ownership: not found")).to_be_visible()
    _no_serious_violations(page)
    with site.api(ANN) as api:

        def mine() -> dict[str, Any]:
            [one] = api.get("/v3/relay/domains").json()
            return dict(one)

        body = mine()
        [dkim] = [r for r in body["records"] if r["check"] == "dkim"]
        page.get_by_role("button", name="Copy the DKIM record's value").click()
        assert page.evaluate("navigator.clipboard.readText()") == dkim["value"]
        page.get_by_role("button", name="Copy the DKIM record's name").click()
        assert page.evaluate("navigator.clipboard.readText()") == dkim["name"]
        # The records published on the site's own DNS server, then checked from the page.
        publish(site.zone, body)
        page.get_by_role("button", name="Check now shop.example").click()
        expect(page.get_by_text("DKIM: found")).to_be_visible()
        assert mine()["verified"] is True and all(mine()["checks"].values())
        switch = page.get_by_role("switch", name="Make addresses on first mail")
        switch.click()
        expect(switch).to_have_attribute("aria-checked", "false")
        assert mine()["catch_all"] is False
        _no_serious_violations(page)
        page.get_by_role("button", name="Delete shop.example").click()
        dialog = page.get_by_role("dialog")
        expect(dialog.get_by_role("heading")).to_contain_text("Delete the domain")
        _no_serious_violations(page)
        assert mine()["id"] == body["id"]  # asking is not deleting
        dialog.get_by_role("button", name="Delete").click()
        expect(page.get_by_role("heading", name="Custom domains")).to_be_visible()
        assert api.get("/v3/relay/domains").json() == []


def test_mailbox_key_set_refused_and_removed(page: Page, site: Site) -> None:
    sign_in(page, site, ANN)
    page.goto(site.url + "/mailboxes")
    with site.api(ANN) as api:
        mailbox = next(m for m in api.get("/v3/relay/mailboxes").json() if m["email"] == ANN)
        url = f"/v3/relay/mailboxes/{mailbox['id']}/pgp"
        page.get_by_label(f"Public key for {ANN}").fill(keys().good)
        page.get_by_role("button", name=f"Set key of {ANN}").click()
        expect(page.locator(f"#fingerprint-{mailbox['id']}")).to_have_text(keys().good_fingerprint)
        assert api.get(url).json()["fingerprint"] == keys().good_fingerprint
        _no_serious_violations(page)
        page.get_by_label(f"New public key for {ANN}").fill(keys().sign_only)
        page.get_by_role("button", name=f"Replace key of {ANN}").click()
        expect(page.get_by_role("alert")).to_have_text("The key has no usable encryption (sub)key.")
        assert api.get(url).json()["fingerprint"] == keys().good_fingerprint
        _no_serious_violations(page)
        page.get_by_role("switch", name="Encrypt the subject").click()
        expect(page.get_by_role("switch", name="Encrypt the subject")).to_have_attribute(
            "aria-checked", "true"
        )
        assert api.get(url).json()["encrypt_subject"] is True
        page.get_by_role("button", name=f"Remove key of {ANN}").click()
        expect(page.get_by_text("No key: forwards arrive unencrypted.")).to_be_visible()
        assert api.get(url).status_code == 404


def test_the_client_guide_from_the_keys_page_shows_its_screenshots(page: Page, site: Site) -> None:
    sign_in(page, site, ANN)
    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="API keys").click()
    page.get_by_role("link", name="the client guide").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(
        "Connect your password manager or browser extension"
    )
    # The server URL to paste is the one this browser reached the relay at.
    values = page.locator("main table").first
    expect(values.get_by_role("cell", name=site.url, exact=True)).to_be_visible()
    images = page.locator("main img")
    expect(images).to_have_count(2)
    for image in images.all():
        image.scroll_into_view_if_needed()
        assert image.get_attribute("alt")
        loaded = image.evaluate("img => img.complete && img.naturalWidth > 0")
        assert loaded, image.get_attribute("src")
    _no_serious_violations(page)
    page.set_viewport_size({"width": 375, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
