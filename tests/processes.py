"""Stopping a process the tests started in its own session, with all it forked."""

from __future__ import annotations

import os
import signal
import subprocess


def stop_session(proc: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """SIGTERM to the session's process group (started with ``start_new_session``), as
    systemd stops a unit; SIGKILL if it is still there after ``timeout`` seconds."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=timeout)
    except ProcessLookupError:
        proc.wait()
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
