"""The Mailboxes and Subdomain pages in a real browser, each action checked through the
API afterwards, and axe-core on every state of both pages."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import USERS, Site, serious_violations, sign_in
from tests.web.conftest import verification_code

pytestmark = pytest.mark.slow
ANN, BOB = USERS


def _open(page: Page, name: str) -> None:
    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name=name).click()


def _no_serious_violations(page: Page) -> None:
    assert serious_violations(page) == [], page.url


def test_mailbox_actions_show_in_the_api(page: Page, site: Site) -> None:
    work = "ann.work@example.net"
    sign_in(page, site, ANN)
    _open(page, "Mailboxes")
    page.get_by_label("Mailbox to add").fill(work)
    page.get_by_role("button", name="Add mailbox").click()
    expect(page.locator(".notice")).to_contain_text(f"6-digit code went to {work}")
    _no_serious_violations(page)
    with site.api(ANN) as api:

        def mine() -> dict[str, dict[str, object]]:
            return {m["email"]: m for m in api.get("/v3/relay/mailboxes").json()}

        assert mine()[work]["verified"] is False
        page.get_by_label(f"6-digit code for {work}").fill(verification_code(site.outbox, work))
        page.get_by_role("button", name=f"Verify {work}").click()
        expect(page.locator(".notice")).to_have_text(f"{work} is verified.")
        assert mine()[work]["verified"] is True
        page.get_by_role("button", name=f"Make {work} the default").click()
        expect(page.locator(f"#mailbox-{mine()[work]['id']}")).to_contain_text("default")
        assert (mine()[work]["default"], mine()[ANN]["default"]) == (True, False)
        # An address forwards to both, chosen on its own page.
        made = api.post("/v3/relay/addresses").json()
        page.goto(f"{site.url}/addresses/{made['id']}")
        page.get_by_role("checkbox", name=ANN).check()
        page.get_by_role("button", name="Save mailboxes").click()
        expect(page.locator(".notice")).to_have_text("Mailboxes saved.")
        chosen = api.get(f"/v3/relay/addresses/{made['id']}/mailboxes").json()["mailbox_ids"]
        assert set(chosen) == {mine()[ANN]["id"], mine()[work]["id"]}
        _no_serious_violations(page)
        # Back to the first mailbox as the default, then delete the other after asking.
        _open(page, "Mailboxes")
        page.get_by_role("button", name=f"Make {ANN} the default").click()
        page.get_by_role("button", name=f"Delete {work}").click()
        dialog = page.get_by_role("dialog")
        expect(dialog.get_by_role("heading")).to_contain_text("Delete the mailbox")
        _no_serious_violations(page)
        assert work in mine()  # asking is not deleting
        dialog.get_by_role("button", name="Delete").click()
        expect(page.get_by_role("heading", name="Mailboxes")).to_be_visible()
        assert list(mine()) == [ANN] and mine()[ANN]["default"] is True
        chosen = api.get(f"/v3/relay/addresses/{made['id']}/mailboxes").json()["mailbox_ids"]
        assert chosen == [mine()[ANN]["id"]]


def test_subdomain_actions_show_in_the_api(page: Page, site: Site) -> None:
    sign_in(page, site, BOB)
    _open(page, "Subdomain")
    _no_serious_violations(page)
    page.get_by_label("Subdomain", exact=True).fill("Bobs")
    page.get_by_role("button", name="Claim").click()
    expect(page.get_by_role("alert")).to_contain_text("written in lower case")
    page.get_by_label("Subdomain", exact=True).fill("bobs")
    page.get_by_role("button", name="Claim").click()
    expect(page.locator("#subdomain")).to_have_text("bobs.relay.example.com")
    _no_serious_violations(page)
    with site.api(BOB) as api:

        def current() -> list[dict[str, object]]:
            found: list[dict[str, object]] = api.get("/v3/relay/subdomains").json()
            return found

        def use() -> object:
            return api.get("/v3/relay/subdomains/use_subdomain").json()["use_relay_subdomain"]

        assert [(s["subdomain"], s["catch_all"]) for s in current()] == [("bobs", True)]
        on_sub = page.get_by_role("switch", name="New addresses on the subdomain")
        on_sub.click()
        expect(on_sub).to_have_attribute("aria-checked", "true")
        assert use() is True
        catch_all = page.get_by_role("switch", name="Make addresses on first mail")
        catch_all.click()
        expect(catch_all).to_have_attribute("aria-checked", "false")
        assert current()[0]["catch_all"] is False
        made = api.post("/v3/relay/addresses").json()
        assert made["full_address"].endswith("@bobs.relay.example.com")
        # Rename: asked first in a dialog, with the plain warning; then the address is gone.
        page.get_by_label("New name").fill("bobs-two")
        page.get_by_role("button", name="Rename", exact=True).click()
        dialog = page.get_by_role("dialog")
        expect(dialog.locator(".warning")).to_contain_text("This deletes the 1 address")
        _no_serious_violations(page)
        assert current()[0]["subdomain"] == "bobs"
        dialog.get_by_role("button", name="Rename and delete the addresses").click()
        expect(page.locator("#subdomain")).to_have_text("bobs-two.relay.example.com")
        assert current()[0]["subdomain"] == "bobs-two"
        assert api.get(f"/v3/relay/addresses/{made['id']}").status_code == 404
        # Delete: asked first, then gone, and new addresses are on the domain again.
        page.get_by_role("button", name="Delete subdomain").click()
        dialog = page.get_by_role("dialog")
        expect(dialog.locator(".warning")).to_contain_text("This deletes the 0 addresses")
        _no_serious_violations(page)
        dialog.get_by_role("button", name="Delete the subdomain and its addresses").click()
        expect(page.get_by_role("button", name="Claim")).to_be_visible()
        assert current() == [] and use() is False
