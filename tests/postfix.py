"""A private Postfix instance for tests, configured from deploy/postfix/ and docs/postfix.md.

It has its own configuration, queue and data directories and listens only on loopback
ports; DNS is off, so it can reach nothing but the loopback next hops it is given.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "postfix.md"
DEPLOY = ROOT / "deploy"
DOC_DOMAIN = "relay.example.com"
DOC_HOST = "mail.example.com"

# The services every Postfix needs; the doc's master.cf lines are added to these.
BASE_SERVICES = """\
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
proxywrite unix -       -       n       -       1       proxymap
smtp      unix  -       -       n       -       -       smtp
relay     unix  -       -       n       -       -       smtp
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
"""


@dataclass(frozen=True)
class Ports:
    inbound: int  # stands for port 25
    smarthost: int  # 10025 in the doc
    maskmail: int  # 2525 in the doc
    policy: int  # 10027 in the doc: maskmail's policy service
    milter: int  # 11332 in the doc: rspamd's proxy worker
    sink: int  # where mail for the owners' domain goes (the internet, in production)


def doc_block(title: str) -> str:
    """The fenced block of docs/postfix.md whose first line is ``# <title>``."""
    for block in re.findall(r"^```[a-z]*\n(.*?)^```$", DOC.read_text(), re.S | re.M):
        if block.startswith(f"# {title}\n"):
            return str(block)
    raise LookupError(f"docs/postfix.md has no block '# {title}'")


RSPAMD_FILES = ("worker-proxy.inc", "milter_headers.conf", "dmarc.conf", "options.inc")
# The files an operator installs (docs/deploy.md), each printed in docs/postfix.md under
# its first line's title.
CONFIG_FILES = {
    "main.cf for maskmail": DEPLOY / "postfix" / "main.cf",
    "master.cf for maskmail": DEPLOY / "postfix" / "master.cf",
    **{
        f"local.d/{name} for maskmail": DEPLOY / "rspamd" / "local.d" / name
        for name in RSPAMD_FILES
    },
}


def config_file(title: str) -> str:
    """The file of deploy/ that docs/postfix.md prints under ``# <title>``."""
    return CONFIG_FILES[title].read_text()


def rspamd_files(milter_port: int) -> dict[str, str]:
    """rspamd's ``local.d`` files as deploy/rspamd/ has them, the milter on ``milter_port``."""
    files = {name: config_file(f"local.d/{name} for maskmail") for name in RSPAMD_FILES}
    files["worker-proxy.inc"] = _replace(
        files["worker-proxy.inc"], '"127.0.0.1:11332"', f'"127.0.0.1:{milter_port}"'
    )
    return files


def maskmail_settings(domain: str, smarthost_port: int) -> dict[str, str]:
    """The doc's ``export`` lines for maskmail, for this test's domain and smarthost."""
    text = _replace(doc_block("maskmail behind Postfix"), DOC_HOST, f"mx.{domain}")
    text = text.replace(DOC_DOMAIN, domain)
    text = _replace(text, "127.0.0.1:10025", f"127.0.0.1:{smarthost_port}")
    found = re.findall(r"^export (MASKMAIL_[A-Z_]+)=(\S+)$", text, re.M)
    if not found:
        raise LookupError("docs/postfix.md sets no MASKMAIL_ variable")
    return dict(found)


def maskmail_commands(maskmail_port: int, policy_port: int) -> list[list[str]]:
    """The doc's ``maskmail`` command lines, in order, as arguments (without the program
    name), the servers moved to this test's ports; the last one is ``up``."""
    text = doc_block("maskmail behind Postfix")
    text = _replace(text, "--smtp-port 2525", f"--smtp-port {maskmail_port}")
    text = _replace(text, "--policy-port 10027", f"--policy-port {policy_port}")
    commands = [
        shlex.split(line, comments=True)[1:]
        for line in text.splitlines()
        if line.startswith("maskmail ")
    ]
    if not commands or commands[-1][:1] != ["up"]:
        raise LookupError("docs/postfix.md no longer ends its maskmail block with 'maskmail up'")
    return commands


def _replace(text: str, old: str, new: str) -> str:
    if old not in text:
        raise LookupError(f"docs/postfix.md or deploy/postfix no longer contains {old!r}")
    return text.replace(old, new)


def configure(
    conf: Path,
    root: Path,
    *,
    domain: str,
    owners_domain: str,
    ports: Ports,
    outside_domains: tuple[str, ...] = (),
    settings: str = "",
) -> None:
    """Write main.cf and master.cf: the doc's blocks, moved to this test's ports, and
    ``settings`` after them. Mail for the owners' domain and ``outside_domains`` goes to
    the sink (the internet)."""
    main = config_file("main.cf for maskmail")
    main = _replace(main, DOC_DOMAIN, domain)
    routes = "".join(
        f", {name}=smtp:[127.0.0.1]:{ports.sink}" for name in (owners_domain, *outside_domains)
    )
    main = _replace(main, "[127.0.0.1]:2525", f"[127.0.0.1]:{ports.maskmail}")
    main = _replace(
        main, f"[127.0.0.1]:{ports.maskmail} }}", f"[127.0.0.1]:{ports.maskmail}{routes} }}"
    )
    main = _replace(main, "inet:127.0.0.1:10027", f"inet:127.0.0.1:{ports.policy}")
    main = _replace(main, "inet:127.0.0.1:11332", f"inet:127.0.0.1:{ports.milter}")
    master = config_file("master.cf for maskmail")
    master = _replace(
        master, "smtp      inet  n       -       y", f"127.0.0.1:{ports.inbound} inet n - n"
    )
    master = _replace(master, "127.0.0.1:10025", f"127.0.0.1:{ports.smarthost}")
    private = f"""\
# A private instance: own directories, loopback only, no DNS, no local delivery.
compatibility_level = 3.6
queue_directory = {root / "queue"}
data_directory = {root / "data"}
maillog_file = {root / "postfix.log"}
maillog_file_prefixes = {root}
myhostname = mx.{domain}
mydestination =
mynetworks = 127.0.0.0/8
inet_interfaces = loopback-only
inet_protocols = ipv4
alias_maps =
local_recipient_maps =
smtp_dns_support_level = disabled
smtp_tls_security_level = none
smtpd_tls_security_level = none
"""
    (conf / "main.cf").write_text(private + main + settings)
    (conf / "master.cf").write_text(BASE_SERVICES + master)


def _postfix(conf: Path, action: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["postfix", "-c", str(conf), action], capture_output=True, text=True, timeout=60
    )


def queue(log: Path) -> list[dict[str, object]]:
    """What the instance whose log is ``log`` holds in its queue (``postqueue -j``)."""
    conf = log.parent / "conf"
    shown = subprocess.run(
        ["postqueue", "-c", str(conf), "-j"], capture_output=True, text=True, timeout=60
    )
    if shown.returncode != 0:
        raise RuntimeError(f"postqueue failed: {shown.stderr}")
    return [json.loads(line) for line in shown.stdout.splitlines() if line.strip()]


@contextmanager
def running_postfix(
    *,
    domain: str,
    owners_domain: str,
    ports: Ports,
    outside_domains: tuple[str, ...] = (),
    settings: str = "",
) -> Iterator[Path]:
    """Start the instance; yield its log file; stop it and remove its directories."""
    if shutil.which("postfix") is None:
        raise RuntimeError("postfix is required (scripts/system-deps.sh installs it)")
    # Postfix's daemons run as the postfix user and must traverse the queue directory,
    # so it cannot live under pytest's root-only temporary directory.
    root = Path(tempfile.mkdtemp(prefix="maskmail-postfix-"))
    root.chmod(0o755)
    conf, data = root / "conf", root / "data"
    try:
        for path in (conf, root / "queue", data):
            path.mkdir()
        shutil.chown(data, user="postfix")
        configure(
            conf,
            root,
            domain=domain,
            owners_domain=owners_domain,
            ports=ports,
            outside_domains=outside_domains,
            settings=settings,
        )
        started = _postfix(conf, "start")
        try:
            if started.returncode != 0:
                # postfix-script writes why to the log, not to a stderr that is no TTY.
                told = _tail(root / "postfix.log")
                raise RuntimeError(f"postfix did not start: {started.stderr}{told}")
            yield root / "postfix.log"
        finally:
            _postfix(conf, "stop")
            _wait_stopped(root / "queue" / "pid" / "master.pid")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _tail(log: Path, lines: int = 20) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _wait_stopped(pid_file: Path) -> None:
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
