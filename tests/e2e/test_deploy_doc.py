"""docs/deploy.md, run: every command of its Debian part, in order, on this machine, in a
private directory that stands for ``/``; then a message in and a reply out through the
Postfix, rspamd and maskmail those commands set up.

Only the doc's placeholders change: each path of its path table moves under the private
directory, each port of its port table to a free loopback port (Redis's stays, the
machine's own), and the names stay. ``apt-get`` runs for real. Where the machine has no
systemd, tests/systemd_stand_in.py stands in for it; ``certbot`` writes a self-signed
certificate where certbot would; ``postconf``, ``postfix`` and ``nginx`` are Debian's,
pointed at their directories under the private root."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import smtplib
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from email import message_from_bytes, policy
from email.utils import getaddresses
from pathlib import Path

import pytest

from tests.dns_server import running_dns
from tests.e2e.conftest import ZONE
from tests.rspamd import rspamd_command, write_overrides
from tests.sink import HOST, Received, Sink
from tests.support import free_port, wait_for_port
from tests.systemd_stand_in import Service, Supervisor, stand_ins

pytestmark = pytest.mark.slow
ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "deploy.md"
DEBIAN_PART = "## On a Debian 12 server"
KEPT_PORTS = {6379}  # the machine's own Redis serves as the one apt installs
# The repository the doc clones: this one (its committed files, as a clone has them).
REPOSITORY = "https://git.example.com/maskmail.git"
OWNER = "you@example.com"  # the doc's own mailbox
# The owner's provider: rspamd checks the owner's reply against these records.
OWNER_ZONE = {
    "example.com": [("TXT", '"v=spf1 ip4:127.0.0.1 -all"')],
    "_dmarc.example.com": [("TXT", '"v=DMARC1; p=none"')],
}


def commands(text: str) -> list[str]:
    """Each command of the ```sh blocks in ``text``: continuations joined, a
    here-document or a shell function kept whole."""
    found: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
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


def table(text: str, header: str) -> list[str]:
    """The first cells of the doc's table whose header row starts with ``header``."""
    start = text.index(f"\n{header}")
    rows = []
    for line in text[start + 1 :].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append(line.split("|")[1].strip())
    return rows


def placeholders(text: str) -> tuple[list[str], list[int]]:
    """The doc's paths and ports, from its two tables."""
    paths = [p for cell in table(text, "| path |") for p in re.findall(r"`(/[^`]+)`", cell)]
    ports = [int(p) for cell in table(text, "| port |") for p in re.findall(r"\d+", cell)]
    return paths, ports


class Private:
    """The private root: the doc's paths and ports moved, as one substitution."""

    def __init__(self, root: Path, paths: list[str], ports: dict[int, int]) -> None:
        self.root = root
        self.ports = ports
        alternatives = "|".join(re.escape(p) for p in sorted(paths, key=len, reverse=True))
        self._paths = re.compile(rf"(?<![\w/.])({alternatives})(?![\w-])")
        self._ports = re.compile(
            r"(?<![\w.])(" + "|".join(str(p) for p in ports if p not in (25, 80, 443)) + r")(?!\d)"
        )

    def path(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def __call__(self, text: str) -> str:
        text = self._paths.sub(lambda m: str(self.root) + m.group(1), text)
        return self._ports.sub(lambda m: str(self.ports[int(m.group(1))]), text)

    def deploy_file(self, text: str) -> str:
        """A file of deploy/ as the checkout here has it: paths and ports moved; the
        internet-facing listeners (Postfix's 25, nginx's 80 and 443) on loopback."""
        text = self(text)
        text = text.replace(
            "smtp      inet  n       -       y",
            # No chroot: the private queue directory has no copy of /etc.
            f"127.0.0.1:{self.ports[25]} inet n - n",
        )
        text = text.replace("listen 80;", f"listen 127.0.0.1:{self.ports[80]};")
        text = text.replace("listen 443 ssl;", f"listen 127.0.0.1:{self.ports[443]} ssl;")
        return "\n".join(line for line in text.splitlines() if "[::]" not in line) + "\n"


def move_deploy_files(checkout: Path, private: Private) -> None:
    """The checkout's deploy/ files with the doc's paths and ports moved."""
    for path in (checkout / "deploy").rglob("*"):
        if path.is_file():
            path.write_text(private.deploy_file(path.read_text()))


def debian_leaves(private: Private, sink: int, dns: int) -> Service:
    """What Debian's packages leave in /etc before the doc's steps, on private ports;
    returns how rspamd runs here."""
    postfix = private.path("/etc/postfix")
    postfix.mkdir(parents=True)
    root = private.root
    # Postfix as Debian's "Internet Site" sets it up, in private directories, loopback
    # only and without DNS; all mail that leaves goes to the sink ("the internet").
    (postfix / "main.cf").write_text(
        f"compatibility_level = 3.6\nqueue_directory = {root / 'spool'}\n"
        f"data_directory = {root / 'postfix-data'}\nmaillog_file = {root / 'postfix.log'}\n"
        f"maillog_file_prefixes = {root}\nmyhostname = debian.localdomain\n"
        "mydestination = $myhostname, localhost\nmynetworks = 127.0.0.0/8\n"
        "inet_interfaces = loopback-only\ninet_protocols = ipv4\nalias_maps =\n"
        f"smtp_dns_support_level = disabled\nrelayhost = [127.0.0.1]:{sink}\n"
    )
    shutil.copy("/usr/share/postfix/master.cf.dist", postfix / "master.cf")
    subprocess.run(["postconf", "-c", str(postfix), "-F", "*/*/chroot = n"], check=True)
    for directory in ("spool", "postfix-data"):
        (root / directory).mkdir()
    shutil.chown(root / "postfix-data", user="postfix")
    rspamd = private.path("/etc/rspamd")
    write_overrides(rspamd, free_port(), nameserver=f"127.0.0.1:{dns}", milter=True)
    (rspamd / "local.d").mkdir()
    nginx = private.path("/etc/nginx")
    for directory in ("sites-available", "sites-enabled"):
        (nginx / directory).mkdir(parents=True)
    temp = "".join(
        f"  {name}_temp_path {root / 'nginx' / name};\n"
        for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    (root / "nginx").mkdir()
    (nginx / "nginx.conf").write_text(
        f"pid {root / 'nginx.pid'};\nerror_log {root / 'nginx' / 'error.log'};\nevents {{}}\n"
        f"http {{\n  access_log off;\n{temp}  include {nginx / 'sites-enabled'}/*;\n}}\n"
    )
    for path in ("/etc/systemd/system", "/var/www/html", "/var/lib/maskmail"):
        private.path(path).mkdir(parents=True, exist_ok=True)
    return Service(start=rspamd_command(rspamd, root / "rspamd"))


def tools(private: Private, bin_dir: Path) -> dict[str, Service]:
    """Debian's postconf, postfix, nginx and curl, pointed at the private root; certbot
    and debconf's selections as stand-ins. Returns the packages' services."""
    postfix = private.path("/etc/postfix")
    nginx = ["/usr/sbin/nginx", "-p", str(private.root / "nginx"), "-c"]
    nginx.append(str(private.path("/etc/nginx/nginx.conf")))
    cert = private.path("/etc/letsencrypt/live")
    wrappers = {
        "postconf": f'exec /usr/sbin/postconf -c {postfix} "$@"',
        "postfix": f'exec /usr/sbin/postfix -c {postfix} "$@"',
        "nginx": f'exec {shlex.join(nginx)} "$@"',
        # The relay's name answers on the private HTTPS port, with the stand-in's certificate.
        "curl": "exec /usr/bin/curl --connect-to "
        f"relay.example.com:443:127.0.0.1:{private.ports[443]} "
        f'--cacert {cert}/relay.example.com/fullchain.pem "$@"',
        # Checks the selections without changing the machine's debconf database.
        "debconf-set-selections": 'exec /usr/bin/debconf-set-selections --checkonly "$@"',
        "certbot": f"exec {shlex.quote(sys.executable)} -c {shlex.quote(CERTBOT)} "
        f'{shlex.quote(str(cert))} {shlex.quote(str(private.root / "deploy-hook"))} "$@"',
    }
    for name, line in wrappers.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{line}\n")
        (bin_dir / name).chmod(0o755)
    return {
        "postfix": Service(
            start=["/usr/sbin/postfix", "-c", str(postfix), "start"],
            stop=["/usr/sbin/postfix", "-c", str(postfix), "stop"],
            reload=["/usr/sbin/postfix", "-c", str(postfix), "reload"],
        ),
        "nginx": Service(start=nginx, stop=[*nginx, "-s", "quit"], reload=[*nginx, "-s", "reload"]),
    }


# certbot certonly --webroot -w DIR -d NAME... --deploy-hook CMD: a self-signed
# certificate for the names, where certbot keeps it; the hook is kept to run later.
CERTBOT = """
import subprocess, sys
from pathlib import Path
live, hook_file, *args = sys.argv[1:]
assert args[0] == "certonly" and "--webroot" in args, args
names = [args[i + 1] for i, a in enumerate(args) if a == "-d"]
assert Path(args[args.index("-w") + 1]).is_dir(), "the webroot does not exist"
Path(hook_file).write_text(args[args.index("--deploy-hook") + 1])
where = Path(live) / names[0]
where.mkdir(parents=True)
subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
    "-subj", "/CN=" + names[0], "-addext", "subjectAltName=" + ",".join("DNS:" + n for n in names),
    "-keyout", str(where / "privkey.pem"), "-out", str(where / "fullchain.pem")],
    check=True, capture_output=True)
"""


@pytest.fixture
def private_root() -> Iterator[Path]:
    # Postfix's daemons run as the postfix user and must traverse it, so it is not
    # under pytest's root-only temporary directory.
    root = Path(tempfile.mkdtemp(prefix="maskmail-deploy-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def wait_for_mail(sink: Sink, count: int, log: Path) -> list[Received]:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and len(sink.messages) < count:
        time.sleep(0.2)
    assert len(sink.messages) >= count, log.read_text(errors="replace")[-4000:]
    return sink.messages


def test_the_debian_recipe_runs_and_mail_goes_in_and_out(private_root: Path, sink: Sink) -> None:
    text = DOC.read_text()
    paths, ports = placeholders(text)
    assert {"/etc/maskmail", "/var/lib/maskmail", "/opt/maskmail"} <= set(paths)
    assert {25, 80, 443, 2525, 10025, 10027, 11332, 8000, 8025} <= set(ports)
    private = Private(
        private_root, paths, {p: p if p in KEPT_PORTS else free_port() for p in ports}
    )
    doc = [
        private(c).replace(REPOSITORY, str(ROOT)) for c in commands(text[text.index(DEBIAN_PART) :])
    ]
    assert len(doc) > 30
    # The clone first; then its deploy/ files are moved to the private paths and ports.
    cloned = next(i for i, c in enumerate(doc) if c.startswith("git clone ")) + 1
    bin_dir = private_root / "bin"
    bin_dir.mkdir()
    logs = private_root / "journal"
    logs.mkdir()
    with running_dns({**ZONE, **OWNER_ZONE}) as dns:
        rspamd = debian_leaves(private, sink.port, dns)
        supervisor = Supervisor(
            unit_dir=private.path("/etc/systemd/system"),
            state_root=private.path("/var/lib"),
            logs=logs,
            services={**tools(private, bin_dir), "rspamd": rspamd},
        )
        with stand_ins(bin_dir, supervisor) as variables:
            env = {**os.environ, **variables, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
            for part in (doc[:cloned], doc[cloned:]):
                done = subprocess.run(
                    ["bash", "-euo", "pipefail", "-c", "\n".join(part)],
                    cwd=private_root, env=env, capture_output=True, text=True, timeout=900,
                    check=False,
                )  # fmt: skip
                assert done.returncode == 0, (done.stderr[-6000:], sorted(supervisor.ran))
                if part[-1].startswith("git clone "):
                    move_deploy_files(private.path("/usr/local/src/maskmail"), private)
            _mail_in_and_out(private, sink, done.stdout)
            # A renewal: certbot's deploy hook reloads nginx and Postfix.
            hook = (private_root / "deploy-hook").read_text()
            renewed = subprocess.run(["bash", "-c", hook], env=env, capture_output=True, text=True)
            assert renewed.returncode == 0, renewed.stderr
            ran = list(supervisor.ran)
            still = supervisor.running.get("maskmail-api.service")
            assert still is not None and still.poll() is None

    # Every process the doc asked for ran, the timers' services once each; the upgrade
    # and the restore restarted the planes.
    assert ran.count("maskmail-smtp.service") == 3 and ran.count("maskmail-api.service") == 3
    assert {"maskmail-backup.service", "maskmail-domains.service", "rspamd", "postfix"} <= set(ran)
    backups = private.path("/var/lib/maskmail/backups")
    assert {"before-upgrade.db", "by-hand.db", f"maskmail-{time.strftime('%a')}.db"} <= {
        p.name for p in backups.iterdir()
    }
    # Installed from the lock, as a copy: nothing in the program points at the checkout.
    [package] = private.path("/opt/maskmail").glob("lib/python3*/site-packages/maskmail")
    assert (package / "cli" / "__init__.py").is_file()
    links = [p.read_text() for p in package.parent.glob("*.pth")]
    assert not [t for t in links if "/usr/local/src" in t], links
    env_file = private.path("/etc/maskmail/maskmail.env").read_text()
    assert "MASKMAIL_DOMAIN=relay.example.com\n" in env_file
    assert "MASKMAIL_AUTHSERV_IDS=mail.example.com\n" in env_file
    # The journal's lines, through jq (which fails on anything but JSON).
    assert '"level":"info"' in done.stdout


def _send(port: int, sender: str, recipient: str, data: bytes) -> None:
    with smtplib.SMTP(HOST, port, timeout=30) as client:
        client.ehlo()
        assert client.has_extn("starttls")  # the certificate of step 5
        assert client.sendmail(sender, [recipient], data) == {}


def _mail_in_and_out(private: Private, sink: Sink, printed: str) -> None:
    """A message from outside to the doc's address, and the owner's reply to it."""
    made = re.findall(r'"full_address":\s*"([a-z0-9]+@relay\.example\.com)"', printed)
    assert len(made) == 1, printed
    address = made[0]
    ports = private.ports
    for port in (ports[11332], ports[2525], ports[10027], ports[25]):
        wait_for_port(port)
    log = private.root / "postfix.log"
    hello = (
        f"From: Alice <alice@sender.example>\r\nTo: {address}\r\nSubject: hello\r\n"
        "Message-ID: <deploy-1@sender.example>\r\n\r\nHello from outside.\r\n"
    ).encode()
    _send(ports[25], "alice@sender.example", address, hello)
    [forward] = wait_for_mail(sink, 1, log)
    assert forward.rcpt_tos == [OWNER]
    forwarded = message_from_bytes(forward.data, policy=policy.default)
    assert getaddresses([str(forwarded["From"])])[0][1] == address
    assert "DKIM-Signature" in forwarded and "d=relay.example.com" in forwarded["DKIM-Signature"]
    alias = str(forwarded["Reply-To"])
    reply = (
        f"From: You <{OWNER}>\r\nTo: {alias}\r\nSubject: Re: hello\r\n"
        "Message-ID: <deploy-2@example.com>\r\nIn-Reply-To: <deploy-1@sender.example>\r\n"
        f"\r\nHello back.\r\n\r\nOn Monday <{OWNER}> wrote:\r\n> Hello from outside.\r\n"
    ).encode()
    _send(ports[25], OWNER, alias, reply)
    answered = wait_for_mail(sink, 2, log)[1]
    assert answered.rcpt_tos == ["alice@sender.example"]
    assert answered.mail_from == address
    assert OWNER not in answered.data.decode().lower()
    sent = message_from_bytes(answered.data, policy=policy.default)
    assert getaddresses([str(sent["From"])]) == [("", address)]
