"""docs/deploy.md, run: every shell command in it runs here (pointed at temporary paths
and a local server), unless it is one this test names as needing a real server."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.sink import HOST
from tests.support import free_port, maskmail_cmd, running

pytestmark = pytest.mark.slow
ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "deploy.md"

# Commands that need root on a real Debian server, the internet, or a running systemd:
# each with what runs here instead. A command added to the doc that is not here is run.
ELSEWHERE = {
    "apt-get update": "the network; the package names are checked with apt-cache",
    "apt-get install -y postfix nginx certbot python3-venv sqlite3": "as above",
    "/opt/maskmail/bin/pip install /path/to/maskmail": "the network; the venv is made here",
    "/opt/maskmail/bin/pip install --upgrade /path/to/maskmail": "as above",
    "certbot certonly --webroot -w /var/www/html -d relay.example.com -d mail.example.com": (
        "a public name; test_deploy.py serves HTTPS with a certificate of its own"
    ),
    "systemctl restart postfix": "systemd",
    "systemctl daemon-reload": "systemd; test_deploy.py runs systemd-analyze verify",
    "systemctl enable --now maskmail-smtp.service maskmail-api.service "
    "maskmail-backup.timer": "as above",
    "systemctl restart maskmail-smtp": "systemd",
    "systemctl restart maskmail-smtp maskmail-api": "systemd",
    "nginx -t && systemctl reload nginx": "test_deploy.py runs nginx -t on the site",
}
APT_PACKAGES = ("postfix", "nginx", "certbot", "python3-venv", "sqlite3")


def commands() -> list[str]:
    """Each command of the doc's ```sh blocks: continuations joined, a here-document or a
    shell function kept whole."""
    found: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", DOC.read_text(), re.S):
        lines = block.splitlines()
        while lines:
            line = lines.pop(0)
            if not line.strip():
                continue
            while line.endswith("\\"):
                line = line[:-1] + " " + lines.pop(0).strip()
            heredoc = re.search(r"<<'?(\w+)'?", line)
            if heredoc or line.rstrip().endswith("{"):
                end = heredoc.group(1) if heredoc else "}"
                while lines and (line.splitlines()[-1] != end):
                    line += "\n" + lines.pop(0)
            found.append(line)
    return found


def bare(command: str) -> str:
    """The command without its trailing comment and repeated spaces."""
    return " ".join(re.sub(r"\s+#.*$", "", command).split())


def test_every_command_in_the_deploy_doc_runs(tmp_path: Path) -> None:
    tmp = tmp_path
    doc = commands()
    named = {bare(c) for c in doc} & ELSEWHERE.keys()
    assert named == ELSEWHERE.keys(), ELSEWHERE.keys() - named  # none stale
    assert "mm() {" in "\n".join(doc)
    (tmp / "postfix").mkdir()
    (tmp / "postfix" / "main.cf").write_text("")
    for name in ("sites-available", "sites-enabled", "systemd"):
        (tmp / name).mkdir()
    port = free_port()
    base = f"http://{HOST}:{port}"
    paths = (
        ("/etc/maskmail", str(tmp / "etc")),
        ("/var/lib/maskmail", str(tmp / "var")),
        ("/opt/maskmail", str(tmp / "venv")),
        ("https://relay.example.com", base),
        ("/etc/nginx/sites-available/", f"{tmp}/sites-available/"),
        ("/etc/nginx/sites-enabled/", f"{tmp}/sites-enabled/"),
        ("/etc/systemd/system/", f"{tmp}/systemd/"),
        ("postconf -e", f"postconf -c {tmp / 'postfix'} -e"),
        ("journalctl -u maskmail-smtp -o cat", f"cat {tmp / 'serve.log'}"),
        ("KEY=...", "KEY=$(mm key create you@example.com)"),
    )
    # `mm` as the doc defines it, without systemd-run: the same settings and data dir.
    script = [
        f"mm() {{ (set -a; . {tmp}/etc/maskmail.env; MASKMAIL_DATA_DIR={tmp}/var "
        f'exec {maskmail_cmd()[0]} "$@"); }}',
        f"apt-cache show --no-all-versions {' '.join(APT_PACKAGES)} > /dev/null",
    ]
    for command in doc:
        if bare(command) in ELSEWHERE or command.startswith("mm() {"):
            continue
        for old, new in paths:
            command = command.replace(old, new)
        script.append(command)
    assert len(script) > 12
    # The doc's default: SQLite in the data directory.
    env = {"MASKMAIL_DATA_DIR": str(tmp / "var"), "MASKMAIL_DOMAIN": "relay.example.com",
           "MASKMAIL_LOG_FORMAT": "json"}  # fmt: skip
    with running(env, "serve", "--port", str(port), port=port, log=tmp / "serve.log"):
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", "\n".join(script)],
            cwd=ROOT, env={**os.environ, **env},
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, (done.stderr, "\n".join(script))
        made = httpx.get(f"{base}/readyz")
    assert made.status_code == 200
    # What the commands left behind.
    assert (tmp / "venv" / "bin" / "python3").exists()
    assert "MASKMAIL_DOMAIN=relay.example.com" in (tmp / "etc" / "maskmail.env").read_text()
    assert {p.name for p in (tmp / "systemd").iterdir()} >= {
        "maskmail-api.service", "maskmail-smtp.service", "maskmail-backup.timer"
    }  # fmt: skip
    assert (tmp / "sites-enabled" / "maskmail").resolve() == tmp / "sites-available" / "maskmail"
    tls = subprocess.run(
        ["postconf", "-c", str(tmp / "postfix"), "-h", "smtpd_tls_security_level", "myhostname"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert tls == ["may", "mail.example.com"]
    assert (tmp / "var" / "backups" / "before-upgrade.db").stat().st_size > 0
    outputs = done.stdout
    assert "v=DKIM1" in outputs  # dkim generate printed the record
    assert '{"status":"ready"}' in outputs.replace(" ", "")
    assert re.search(r'"full_address":\s*"[a-z0-9]+@relay\.example\.com"', outputs), outputs
    # The journal's lines, through jq (which fails on anything but JSON): pretty-printed.
    assert '\n  "level": "info",\n' in outputs
