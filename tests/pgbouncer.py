"""A private PgBouncer in transaction pooling mode in front of the test PostgreSQL."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.engine import make_url

from tests.support import free_port, wait_for_port

PGBOUNCER = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"


@contextmanager
def running_pgbouncer(url: str, tmp: Path) -> Iterator[str]:
    """Yields the URL maskmail uses through PgBouncer (docs/operations.md says why it
    turns the prepared statement cache off)."""
    target = make_url(url)
    port = free_port()
    # PgBouncer will not run as root: as root, it is started as postgres, which must be
    # able to read its configuration and write its log.
    home = Path(tempfile.mkdtemp(prefix="pgbouncer-", dir=tmp.parent if os.geteuid() else None))
    ini = home / "pgbouncer.ini"
    (home / "userlist.txt").write_text(f'"{target.username}" ""\n')
    ini.write_text(
        "[databases]\n"
        f"* = host={target.host} port={target.port or 5432}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = trust\nauth_file = {home / 'userlist.txt'}\n"
        "pool_mode = transaction\nmax_client_conn = 500\ndefault_pool_size = 8\n"
        f"logfile = {home / 'pgbouncer.log'}\npidfile = {home / 'pgbouncer.pid'}\n"
    )
    command = [PGBOUNCER, str(ini)]
    if os.geteuid() == 0:
        shutil.chown(home, "postgres")
        home.chmod(0o755)
        command[1:1] = ["-u", "postgres"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)
        pooled = target.set(host="127.0.0.1", port=port).update_query_dict(
            {"prepared_statement_cache_size": "0"}
        )
        yield pooled.render_as_string(hide_password=False)
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        shutil.rmtree(home, ignore_errors=True)
