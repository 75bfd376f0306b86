"""A private rspamd (Debian's package) for tests: own config, dirs and loopback port.

Its DNS resolver points at a closed loopback port and the modules that query services
on the internet are off, so nothing it does leaves the machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from tests.processes import stop_session
from tests.support import free_port

CONFIG = "/etc/rspamd/rspamd.conf"
NETWORK_MODULES = ("fuzzy_check", "rbl", "phishing", "url_redirector", "neural", "asn")
START_TIMEOUT = 180


def write_overrides(local: Path, port: int, *, nameserver: str, milter: bool) -> None:
    """The test's own settings in ``local/override.d``: the normal worker on ``port``,
    DNS at ``nameserver``, the network modules off, logs to the console."""
    override = local / "override.d"
    override.mkdir(parents=True)
    (override / "worker-normal.inc").write_text(f'bind_socket = "127.0.0.1:{port}";\ncount = 1;\n')
    for worker in ("controller", "fuzzy") if milter else ("controller", "proxy", "fuzzy"):
        (override / f"worker-{worker}.inc").write_text("enabled = false;\n")
    (override / "logging.inc").write_text('type = "console";\nlevel = "error";\n')
    (override / "options.inc").write_text(
        f'dns {{\n  nameserver = ["{nameserver}"];\n  timeout = 0.5s;\n  retransmits = 1;\n}}\n'
        "disable_hyperscan = true;\n"
    )
    # hfilter judges the client's host name, which on loopback is "localhost".
    for module in (*NETWORK_MODULES, "hfilter") if milter else NETWORK_MODULES:
        (override / f"{module}.conf").write_text("enabled = false;\n")


def rspamd_command(local: Path, tmp: Path) -> list[str]:
    """rspamd in the foreground on the configuration directory ``local`` (its
    ``LOCAL_CONFDIR``), with its database, run and log directories under ``tmp``."""
    binary = shutil.which("rspamd")
    if binary is None:
        raise RuntimeError("rspamd is required (scripts/system-deps.sh installs it)")
    dirs = {name: tmp / name for name in ("db", "run", "log")}
    for path in dirs.values():
        path.mkdir(parents=True)
    command = [binary, "-f", "-i", "-c", CONFIG, "--var", f"LOCAL_CONFDIR={local}"]
    command += ["--var", f"DBDIR={dirs['db']}", "--var", f"RUNDIR={dirs['run']}"]
    command += ["--var", f"LOGDIR={dirs['log']}"]
    if os.geteuid() == 0:
        command += ["-u", "root", "-g", "root"]
    return command


def _wait_until_up(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"rspamd exited early with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/ping", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    raise TimeoutError("rspamd did not start")


@contextmanager
def running_rspamd(
    tmp: Path,
    *,
    nameserver: str = "127.0.0.1:1",
    milter: bool = False,
    local_d: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """Start rspamd; yield its HTTP URL; stop it and its workers afterwards.

    ``nameserver`` is its DNS resolver (by default a closed port); with ``milter`` its
    proxy worker runs too, configured by the ``local_d`` files (``worker-proxy.inc``).
    """
    port = free_port()
    local = tmp / "local"
    write_overrides(local, port, nameserver=nameserver, milter=milter)
    (local / "local.d").mkdir()
    for name, text in (local_d or {}).items():
        (local / "local.d" / name).write_text(text)
    command = rspamd_command(local, tmp)
    log = (tmp / "rspamd.out").open("wb")
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, proc)
        yield url
    finally:
        # Its own session: the main process and the workers it forked stop together.
        stop_session(proc)
        log.close()
