"""Screenshots of the dashboard for docs/dashboard.md, desktop and 375 px wide, and for
the users' guide docs/help-clients.md (into the package's static/help, so that the
dashboard serves them itself).

    .venv/bin/python scripts/dashboard_screenshots.py   # or: make screenshots

Runs ``maskmail up`` on a scratch SQLite database with a demo account, a few addresses,
a custom domain (checked against a DNS server on loopback that holds some of its
records) and some made-up activity, and drives Debian's chromium through Playwright.
"""

from __future__ import annotations

import random
import sqlite3
import sys
import tempfile
from pathlib import Path

import httpx
from playwright.sync_api import Page, sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.api.test_domains import publish
from tests.dns_server import running_dns
from tests.support import free_port, run_cli, running

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "images"
HELP = ROOT / "src" / "maskmail" / "web" / "static" / "help"
EMAIL = "you@example.com"
PASSWORD = "a demo password"  # noqa: S105 - a throwaway database
DESCRIPTIONS = ("newsletter", "bank", "shop.example", "forum", "", "train tickets")


def _cli(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    result = run_cli(env, *args, stdin=stdin)
    if result.returncode != 0:
        raise SystemExit(result.stderr)
    return result.stdout


def seed(env: dict[str, str], url: str, db: Path, zone: dict[str, list[tuple[str, str]]]) -> None:
    key = _cli(env, "key", "create", EMAIL).strip()
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as api:
        for description in DESCRIPTIONS:
            made = api.post("/v3/relay/addresses").json()
            api.patch(f"/v3/relay/addresses/{made['id']}", json={"description": description})
        # A second mailbox waiting for its code, and a subdomain new addresses go to.
        api.post("/v3/relay/mailboxes", json={"email": "you.at.work@example.net"})
        api.post("/v3/relay/subdomains", json={"subdomain": "you"})
        api.put("/v3/relay/subdomains/use_subdomain", json={"use_relay_subdomain": True})
        # A domain part-way set up: ownership, MX and SPF found; DKIM and DMARC not yet.
        domain = api.post("/v3/relay/domains", json={"domain": "example.org"}).json()
        publish(zone, domain, "ownership", "mx", "spf")
        api.post(f"/v3/relay/domains/{domain['id']}/check")
    # Made-up history for the chart; the mail plane writes these rows in real use.
    pick = random.Random(14)  # noqa: S311 - demo figures, not secrets
    with sqlite3.connect(db) as conn:
        today = int(conn.execute("SELECT CAST(strftime('%s','now') AS INTEGER)").fetchone()[0])
        day = today // 86_400
        for address_id in range(1, len(DESCRIPTIONS) + 1):
            for back in range(30):
                counts = [pick.randint(0, 4), pick.randint(0, 1), pick.randint(0, 1), 0]
                counts[3] = pick.randint(0, 1) if counts[0] else 0
                conn.execute(
                    "INSERT INTO daily_activity VALUES (?, ?, ?, ?, ?, ?)",
                    (address_id, day - back, *counts),
                )
        for name in ("num_forwarded", "num_blocked", "num_spam", "num_replied"):
            conn.execute(
                f"UPDATE addresses SET {name} = (SELECT sum({name}) FROM daily_activity "  # noqa: S608
                "WHERE address_id = addresses.id)"
            )


def _shoot(page: Page, url: str, name: str) -> None:
    """The page at 1280 and 375 px, in the light theme and the dark one."""
    for theme, dark in (("light", ""), ("dark", "-dark")):
        page.emulate_media(color_scheme=theme)  # type: ignore[arg-type]
        for width, suffix in ((1280, "desktop"), (375, "375px")):
            page.set_viewport_size({"width": width, "height": 800})
            page.goto(url)
            page.screenshot(path=OUT / f"dashboard-{name}-{suffix}{dark}.png")
    page.emulate_media(color_scheme="light")


def _shoot_dialog(page: Page, url: str) -> None:
    """Delete asks in a dialog when script runs."""
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(url + "/")
    page.get_by_role("button", name="Delete").first.click()
    page.get_by_role("dialog").wait_for()
    page.screenshot(path=OUT / "dashboard-delete-dialog-desktop.png")
    page.keyboard.press("Escape")


def _shoot_guide(page: Page, url: str) -> None:
    """What docs/help-clients.md shows: a key just created, and the values to paste."""
    page.set_viewport_size({"width": 900, "height": 600})
    page.goto(url + "/keys")
    page.get_by_role("button", name="Create key").click()
    page.locator("#new-key").wait_for()
    page.locator("main").screenshot(path=HELP / "keys.png")
    # As a person sees it behind the relay's proxy (the local peer is a trusted proxy).
    page.set_extra_http_headers(
        {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "mask.example.com"}
    )
    page.goto(url + "/help/clients")
    values = page.get_by_role("heading", name="2. The values to paste")
    values.scroll_into_view_if_needed()
    top = values.bounding_box()
    table = page.locator("main table").first.bounding_box()
    assert top is not None and table is not None
    height = table["y"] + table["height"] - top["y"] + 16
    page.screenshot(
        path=HELP / "guide.png", clip={"x": 0, "y": top["y"] - 8, "width": 900, "height": height}
    )


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    HELP.mkdir(parents=True, exist_ok=True)
    zone: dict[str, list[tuple[str, str]]] = {}
    with tempfile.TemporaryDirectory() as tmp, running_dns(zone) as dns:
        db = Path(tmp) / "demo.db"
        env = {
            "MASKMAIL_DATABASE_URL": f"sqlite+aiosqlite:///{db}",
            "MASKMAIL_DNS_RESOLVER": f"127.0.0.1:{dns}",
            "MASKMAIL_DATA_DIR": tmp,
            "MASKMAIL_DOMAIN": "relay.example.com",
        }
        _cli(env, "db", "upgrade")
        _cli(env, "user", "add", EMAIL)
        _cli(env, "user", "password", EMAIL, stdin=PASSWORD + "\n")
        port = free_port()
        up = ("up", "--api-port", str(port), "--smtp-port", str(free_port()))
        with running(env, *up, port=port, log=Path(tmp) / "up.log"):
            url = f"http://127.0.0.1:{port}"
            seed(env, url, db, zone)
            with sync_playwright() as driver:
                browser = driver.chromium.launch(
                    executable_path="/usr/bin/chromium", args=["--no-sandbox"]
                )
                page = browser.new_page()
                _shoot(page, url + "/", "sign-in")
                page.get_by_label("Email").fill(EMAIL)
                page.get_by_label("Password").fill(PASSWORD)
                page.get_by_role("button", name="Sign in").click()
                page.locator("header details.menu").wait_for()  # the menu: signed in
                _shoot(page, url + "/", "addresses")
                _shoot(page, url + "/addresses/3", "address")
                _shoot(page, url + "/mailboxes", "mailboxes")
                _shoot(page, url + "/subdomain", "subdomain")
                _shoot(page, url + "/domains", "domains")
                _shoot(page, url + "/activity", "activity")
                _shoot(page, url + "/keys", "keys")
                _shoot(page, url + "/password", "password")
                _shoot(page, url + "/help/clients", "help")
                _shoot(page, url + "/addresses/999999", "error")
                _shoot(page, url + "/addresses/2/delete", "delete")
                _shoot_dialog(page, url)
                _shoot_guide(page, url)
                browser.close()


if __name__ == "__main__":
    main()
