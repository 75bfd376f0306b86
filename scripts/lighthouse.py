"""Lighthouse's accessibility and best-practices scores for every dashboard page, in the
light theme and the dark one; exits non-zero unless every score is 100.

    .venv/bin/python scripts/lighthouse.py   # or: make lighthouse

Installs the pinned Lighthouse from the npm registry into .tools/lighthouse on first
use (npm comes from Debian's ``npm`` package, scripts/system-deps.sh), runs ``maskmail
up`` on a scratch SQLite database with the demo data of scripts/dashboard_screenshots.py,
signs in, and points Lighthouse (driving Debian's chromium) at each page with the
session cookie. Everything it loads is on loopback: the pages load nothing from another
host, and Lighthouse runs without error reporting and chromium without its background
network services.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from dashboard_screenshots import EMAIL, PASSWORD, seed  # beside this script

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.dns_server import running_dns
from tests.support import free_port, run_cli, running

ROOT = Path(__file__).resolve().parents[1]
VERSION = "12.8.2"  # pinned; the next major needs a newer Node than Debian ships
PREFIX = ROOT / ".tools" / "lighthouse"
LIGHTHOUSE = PREFIX / "node_modules" / ".bin" / "lighthouse"
CHROMIUM = "/usr/bin/chromium"
CATEGORIES = ("accessibility", "best-practices")
# Chromium picks the theme the pages follow (prefers-color-scheme) from Blink's setting.
THEMES = {"light": "preferredColorScheme=1", "dark": "preferredColorScheme=0"}
ERROR_PAGE = "/addresses/999999"
# Lighthouse's own settings, but the console line of the page's own 404 is not an error.
ERROR_PAGE_CONFIG = {
    "extends": "lighthouse:default",
    "audits": [
        {
            "path": "errors-in-console",
            "options": {"ignoredPatterns": ["the server responded with a status of 404"]},
        }
    ],
}
PAGES = (
    ("sign-in", "/", False),
    ("addresses", "/", True),
    ("address", "/addresses/3", True),
    ("mailboxes", "/mailboxes", True),
    ("subdomain", "/subdomain", True),
    ("domains", "/domains", True),
    ("activity", "/activity", True),
    ("keys", "/keys", True),
    ("password", "/password", True),
    ("two-factor", "/two-factor", True),
    ("help", "/help/clients", True),
    ("delete", "/addresses/2/delete", True),
    ("admin", "/admin", True),
    ("error", ERROR_PAGE, True),
)


def install() -> Path:
    """The pinned Lighthouse, installed into .tools/lighthouse unless it is there."""
    installed = PREFIX / "node_modules" / "lighthouse" / "package.json"
    if not installed.exists() or json.loads(installed.read_text())["version"] != VERSION:
        PREFIX.mkdir(parents=True, exist_ok=True)
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("npm is required (scripts/system-deps.sh installs it)")
        subprocess.run(  # noqa: S603 - our own fixed command
            [
                npm,
                "install",
                "--prefix",
                str(PREFIX),
                "--save-exact",
                "--no-audit",
                "--no-fund",
                f"lighthouse@{VERSION}",
            ],
            check=True,
            stdout=sys.stderr,  # stdout is the table
        )
    return LIGHTHOUSE


def _cli(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    result = run_cli(env, *args, stdin=stdin)
    if result.returncode != 0:
        raise SystemExit(result.stderr)
    return result.stdout


def _session_cookie(url: str) -> str:
    """Signs in as the browser would, and returns the Cookie header the pages need."""
    with httpx.Client(base_url=url, headers={"Origin": url}) as client:
        answer = client.post("/sign-in", data={"email": EMAIL, "password": PASSWORD})
        if answer.status_code != 303 or "maskmail_session" not in client.cookies:
            raise SystemExit(f"sign-in failed: {answer.status_code}")
        return "; ".join(f"{name}={value}" for name, value in client.cookies.items())


def score(url: str, theme: str, cookie: str | None, out: Path) -> dict[str, float]:
    """One Lighthouse run: each category's score out of 100, the report in ``out``."""
    flags = f"--headless=new --no-sandbox --blink-settings={THEMES[theme]}"
    command = [
        str(LIGHTHOUSE),
        url,
        f"--only-categories={','.join(CATEGORIES)}",
        f"--chrome-flags={flags}",
        "--no-enable-error-reporting",
        "--output=json",
        f"--output-path={out}",
        "--quiet",
    ]
    if url.endswith(ERROR_PAGE):
        # Its 404 is what is under test; chromium logs that status as a console error.
        config = out.with_suffix(".config.json")
        config.write_text(json.dumps(ERROR_PAGE_CONFIG))
        command += ["--ignore-status-code", f"--config-path={config}"]
    if cookie:
        command.append("--extra-headers=" + json.dumps({"Cookie": cookie}))
    env = {**os.environ, "CHROME_PATH": CHROMIUM}
    subprocess.run(command, check=True, env=env, timeout=300)  # noqa: S603 - our own command
    report = json.loads(out.read_text())
    if report.get("runtimeError"):
        raise SystemExit(f"{url}: {report['runtimeError']['message']}")
    if report["finalDisplayedUrl"] != url:  # sent to sign in: the cookie did not hold
        raise SystemExit(f"{url}: Lighthouse saw {report['finalDisplayedUrl']}")
    return {name: round(100 * (report["categories"][name]["score"] or 0)) for name in CATEGORIES}


def failing(report: Path) -> list[str]:
    """The scored audits of a report that did not pass."""
    data = json.loads(report.read_text())
    audits = data["audits"]
    names = []
    for category in CATEGORIES:
        for ref in data["categories"][category]["auditRefs"]:
            audit = audits[ref["id"]]
            if ref["weight"] and audit["score"] is not None and audit["score"] < 1:
                names.append(f"{ref['id']}: {audit['title']}")
    return names


@contextmanager
def demo_site(tmp: Path) -> Iterator[str]:
    """``maskmail up`` on a scratch database with the screenshots' demo account, an admin."""
    zone: dict[str, list[tuple[str, str]]] = {}
    with running_dns(zone) as dns:
        db = tmp / "demo.db"
        env = {
            "MASKMAIL_DATABASE_URL": f"sqlite+aiosqlite:///{db}",
            "MASKMAIL_DNS_RESOLVER": f"127.0.0.1:{dns}",
            "MASKMAIL_DATA_DIR": str(tmp),
            "MASKMAIL_DOMAIN": "relay.example.com",
        }
        _cli(env, "db", "upgrade")
        _cli(env, "user", "add", EMAIL)
        _cli(env, "user", "password", EMAIL, stdin=PASSWORD + "\n")
        _cli(env, "user", "admin", EMAIL)
        port = free_port()
        up = ("up", "--api-port", str(port), "--smtp-port", str(free_port()))
        with running(env, *up, port=port, log=tmp / "up.log"):
            url = f"http://127.0.0.1:{port}"
            seed(env, url, db, zone)
            yield url


def main() -> int:
    install()
    below: list[tuple[str, str, list[str]]] = []
    print(f"{'page':<12} {'theme':<6} " + " ".join(f"{c:>15}" for c in CATEGORIES), flush=True)
    with tempfile.TemporaryDirectory() as scratch, demo_site(Path(scratch)) as url:
        cookie = _session_cookie(url)
        for name, path, signed_in in PAGES:
            for theme in THEMES:
                out = Path(scratch) / f"{name}-{theme}.json"
                got = score(url + path, theme, cookie if signed_in else None, out)
                line = " ".join(f"{got[c]:>15}" for c in CATEGORIES)
                print(f"{name:<12} {theme:<6} {line}", flush=True)
                if min(got.values()) < 100:
                    below.append((name, theme, failing(out)))
    for name, theme, audits in below:
        print(f"\n{name} ({theme}) below 100:", *audits, sep="\n  ")
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
