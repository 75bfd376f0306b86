"""The reference MTA: a private Postfix on loopback that relays the bench's mail to the sink.

It does what maskmail does for these messages, the way a plain Postfix would: the relay
addresses are a ``virtual_alias_domains`` domain, ``virtual_alias_maps`` maps each one to
its owner's mailbox, unknown addresses are refused at RCPT, and everything is relayed to
the sink as ``relayhost``. It stays a normal queueing MTA (queue files, qmgr, slow start,
connection cache, flow control at their defaults); only what would make it slow for
reasons that have nothing to do with mail is off: DNS (the next hop is an IP address,
client names are not looked up) and TLS, which maskmail's leg to its smarthost lacks too.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.postfix import BASE_SERVICES, _postfix, _wait_stopped


@dataclass(frozen=True)
class Instance:
    root: Path
    port: int

    @property
    def master_pid(self) -> int:
        return int((self.root / "queue" / "pid" / "master.pid").read_text().strip())

    @property
    def log(self) -> Path:
        return self.root / "postfix.log"


def main_cf(root: Path, *, domain: str, sink_port: int) -> str:
    return f"""\
compatibility_level = 3.6
queue_directory = {root / "queue"}
data_directory = {root / "data"}
maillog_file = {root / "postfix.log"}
maillog_file_prefixes = {root}
myhostname = mx.bench.localhost
mydestination =
mynetworks = 127.0.0.0/8
inet_interfaces = loopback-only
inet_protocols = ipv4
alias_maps =
alias_database =
local_recipient_maps =
biff = no
virtual_alias_domains = {domain}
virtual_alias_maps = hash:{root / "conf" / "virtual"}
relayhost = [127.0.0.1]:{sink_port}
# maskmail relays for nobody, whoever connects: neither does this instance.
smtpd_relay_restrictions = reject_unauth_destination
smtpd_peername_lookup = no
smtp_dns_support_level = disabled
smtp_host_lookup = native
smtp_tls_security_level = none
smtpd_tls_security_level = none
"""


@contextmanager
def running_reference(
    *, domain: str, port: int, sink_port: int, aliases: Sequence[tuple[str, str]]
) -> Iterator[Instance]:
    """Start the instance with ``aliases`` (relay address, owner); stop and remove it."""
    if shutil.which("postfix") is None:
        raise RuntimeError("postfix is required (scripts/system-deps.sh installs it)")
    # Postfix's daemons run as the postfix user and must traverse these directories.
    root = Path(tempfile.mkdtemp(prefix="maskmail-bench-postfix-"))
    root.chmod(0o755)
    conf = root / "conf"
    try:
        for path in (conf, root / "queue", root / "data"):
            path.mkdir()
        shutil.chown(root / "data", user="postfix")
        (conf / "main.cf").write_text(main_cf(root, domain=domain, sink_port=sink_port))
        smtpd = f"127.0.0.1:{port} inet n - n - - smtpd\n"
        (conf / "master.cf").write_text(BASE_SERVICES + smtpd)
        (conf / "virtual").write_text("".join(f"{a} {owner}\n" for a, owner in aliases))
        subprocess.run(
            ["postmap", "-c", str(conf), f"hash:{conf / 'virtual'}"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        started = _postfix(conf, "start")
        try:
            if started.returncode != 0:
                raise RuntimeError(f"postfix did not start: {started.stderr}")
            yield Instance(root, port)
        finally:
            _postfix(conf, "stop")
            _wait_stopped(root / "queue" / "pid" / "master.pid")
    finally:
        shutil.rmtree(root, ignore_errors=True)
