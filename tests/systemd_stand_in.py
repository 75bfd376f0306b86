"""Stand-ins for systemd's commands where no systemd runs (a container, CI), so that
docs/deploy.md's commands run as written: the units of deploy/systemd start as plain
processes, with their ``ExecStart``, ``Environment`` and ``EnvironmentFile``.

``systemctl`` asks a supervisor in the test's own process (over a Unix socket), so every
process it starts is the test's child and is stopped when the test ends. ``systemd-run``
runs its command in the foreground with the unit properties that set its environment;
``journalctl -u UNIT`` prints what the unit wrote. Packages' own services (Postfix,
rspamd, nginx) are started the way the test says; as no package started them at install,
the first ``reload`` of one starts it.

This file is also the stand-ins' program: ``python systemd_stand_in.py COMMAND ...``.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

if __package__ is None or __package__ == "":  # run as the stand-ins' program
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.processes import stop_session

SOCKET_VARIABLE = "MASKMAIL_TEST_SYSTEMD"
# What systemd gives a service: no variable of the caller's.
BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
}


def read_unit(path: Path) -> dict[str, list[tuple[str, str]]]:
    """A unit file as its sections' ``(key, value)`` lines, in order (keys may repeat)."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
        elif "=" in line and current is not None:
            key, value = line.split("=", 1)
            current.append((key.strip(), value.strip()))
        else:
            raise ValueError(f"{path.name}: not a unit file line: {raw!r}")
    return sections


def values(unit: Mapping[str, list[tuple[str, str]]], section: str, key: str) -> list[str]:
    return [value for name, value in unit.get(section, []) if name == key]


def environment(assignments: Sequence[str], files: Sequence[str]) -> dict[str, str]:
    """``Environment=`` assignments, then ``EnvironmentFile=`` files (``-`` marks an
    optional one), over what systemd starts every service with."""
    env = dict(BASE_ENV)
    for assignment in assignments:
        for word in shlex.split(assignment):
            name, value = word.split("=", 1)
            env[name] = value
    for file in files:
        path = Path(file.removeprefix("-"))
        if not path.exists():
            if file.startswith("-"):
                continue
            raise FileNotFoundError(f"EnvironmentFile {path} is missing")
        for line in path.read_text().splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                name, value = line.split("=", 1)
                env[name.strip()] = value.strip().strip("'\"")
    return env


@dataclass(frozen=True)
class Service:
    """A package's service as the test runs it: ``start`` either stays in the foreground
    (rspamd) or, with ``stop``, starts a daemon (Postfix, nginx)."""

    start: list[str]
    stop: list[str] | None = None
    reload: list[str] | None = None


@dataclass
class Supervisor:
    """What ``systemctl`` does here: units of ``unit_dir`` and the given ``services``."""

    unit_dir: Path
    state_root: Path  # stands for /var/lib: where StateDirectory= is made
    logs: Path
    services: Mapping[str, Service]
    running: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    daemons: set[str] = field(default_factory=set)
    ran: list[str] = field(default_factory=list)  # every start, in order
    lock: threading.Lock = field(default_factory=threading.Lock)

    def command(self, argv: list[str]) -> tuple[int, str]:
        words = [word for word in argv if not word.startswith("-")]
        if not words:
            return 1, "systemctl stand-in: no command\n"
        verb, names = words[0], words[1:]
        with self.lock:
            try:
                return 0, self._do(verb, names, now="--now" in argv)
            except (OSError, ValueError, RuntimeError, subprocess.SubprocessError) as exc:
                return 1, f"systemctl stand-in: {verb} {' '.join(names)}: {exc}\n"

    def _do(self, verb: str, names: list[str], *, now: bool) -> str:
        if verb == "daemon-reload":
            for path in self.unit_dir.iterdir():
                read_unit(path)
            return ""
        actions = {
            "enable": self._start if now else lambda name: None,
            "start": self._start,
            "stop": self._stop,
            "restart": self._restart,
            "reload": self._reload,
        }
        if verb not in actions:
            raise ValueError(f"the stand-in knows no '{verb}'")
        for name in names:
            actions[verb](name)
        return ""

    def _unit(self, name: str) -> tuple[str, dict[str, list[tuple[str, str]]]] | None:
        for candidate in (name, f"{name}.service"):
            if (self.unit_dir / candidate).exists():
                return candidate, read_unit(self.unit_dir / candidate)
        return None

    def _start(self, name: str) -> None:
        found = self._unit(name)
        if found is None:
            self._start_service(name)
            return
        unit_name, unit = found
        self.ran.append(unit_name)
        if unit_name.endswith(".timer"):
            if not values(unit, "Timer", "OnCalendar"):
                raise ValueError(f"{unit_name} has no OnCalendar")
            # The timer's first run, now: its service must succeed.
            target = values(unit, "Timer", "Unit") or [unit_name.replace(".timer", ".service")]
            self._start(target[0])
            return
        for state in values(unit, "Service", "StateDirectory"):
            (self.state_root / state).mkdir(parents=True, exist_ok=True)
        env = environment(
            values(unit, "Service", "Environment"), values(unit, "Service", "EnvironmentFile")
        )
        [exec_start] = values(unit, "Service", "ExecStart")
        argv = shlex.split(exec_start.replace("%%", "%"))
        log = (self.logs / f"{unit_name.removesuffix('.service')}.log").open("ab")
        if values(unit, "Service", "Type") == ["oneshot"]:
            done = subprocess.run(argv, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=300)
            log.close()
            if done.returncode != 0:
                raise RuntimeError(f"{unit_name} exited with {done.returncode}")
            return
        if unit_name in self.running:
            raise RuntimeError(f"{unit_name} is already running")
        self.running[unit_name] = subprocess.Popen(
            argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()

    def _start_service(self, name: str) -> None:
        service = self.services.get(name)
        if service is None:
            raise ValueError(f"no unit or service '{name}'")
        self.ran.append(name)
        log = (self.logs / f"{name}.log").open("ab")
        if service.stop is None:
            self.running[name] = subprocess.Popen(
                service.start, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        else:
            subprocess.run(
                service.start, stdout=log, stderr=subprocess.STDOUT, check=True, timeout=120
            )
            self.daemons.add(name)
        log.close()

    def _stop(self, name: str) -> None:
        service = self.services.get(name)
        if name in self.daemons and service is not None and service.stop is not None:
            subprocess.run(service.stop, capture_output=True, check=True, timeout=120)
            self.daemons.discard(name)
            return
        key = name if name in self.running or service is not None else f"{name}.service"
        proc = self.running.pop(key, None)
        if proc is not None:
            stop_session(proc)

    def _restart(self, name: str) -> None:
        self._stop(name)
        self._start(name)

    def _reload(self, name: str) -> None:
        service = self.services.get(name)
        if name in self.daemons and service is not None and service.reload is not None:
            subprocess.run(service.reload, capture_output=True, check=True, timeout=120)
        else:
            self._restart(name)

    def stop_all(self) -> None:
        with self.lock:
            for name in list(self.daemons):
                self._stop(name)
            for proc in self.running.values():
                stop_session(proc)
            self.running.clear()


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        supervisor: Supervisor = self.server.supervisor  # type: ignore[attr-defined]
        code, out = supervisor.command(json.loads(self.rfile.readline()))
        self.wfile.write(json.dumps([code, out]).encode() + b"\n")


@contextmanager
def stand_ins(bin_dir: Path, supervisor: Supervisor) -> Iterator[dict[str, str]]:
    """Write ``systemctl``, ``systemd-run`` and ``journalctl`` into ``bin_dir`` and serve
    the supervisor; yield the variables a shell needs to use them. Stops every process
    it started when the block ends."""
    sock = bin_dir / "systemd.sock"
    server = socketserver.ThreadingUnixStreamServer(str(sock), _Handler)
    server.supervisor = supervisor  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    for command in ("systemctl", "systemd-run", "journalctl"):
        script = bin_dir / command
        script.write_text(
            f"#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(__file__)} {command} "
            f'{shlex.quote(str(supervisor.logs))} {shlex.quote(str(supervisor.state_root))} "$@"\n'
        )
        script.chmod(0o755)
    try:
        yield {SOCKET_VARIABLE: str(sock)}
    finally:
        server.shutdown()
        server.server_close()
        supervisor.stop_all()


def _systemctl(argv: list[str]) -> int:
    with socket.socket(socket.AF_UNIX) as client:
        client.connect(os.environ[SOCKET_VARIABLE])
        client.sendall(json.dumps(argv).encode() + b"\n")
        code, out = json.loads(client.makefile().readline())
    sys.stderr.write(out)
    return int(code)


def _systemd_run(state_root: Path, argv: list[str]) -> int:
    """``systemd-run [options] COMMAND...``: the command, in the foreground, with the
    environment its ``Environment``/``EnvironmentFile`` properties and ``--setenv`` give,
    and its ``StateDirectory`` made."""
    assignments: list[str] = []
    files: list[str] = []
    while argv and argv[0].startswith("-"):
        option = argv.pop(0)
        if option.startswith("--property="):
            key, value = option.removeprefix("--property=").split("=", 1)
            if key == "Environment":
                assignments.append(value)
            elif key == "EnvironmentFile":
                files.append(value)
            elif key == "StateDirectory":
                (state_root / value).mkdir(parents=True, exist_ok=True)
        elif option.startswith("--setenv="):
            assignments.append(shlex.quote(option.removeprefix("--setenv=")))
    env = environment(assignments, files)
    os.execvpe(argv[0], argv, env)


def _journalctl(logs: Path, argv: list[str]) -> int:
    """``journalctl -u UNIT [-o cat]``: what the unit wrote."""
    unit = argv[argv.index("-u") + 1].removesuffix(".service")
    sys.stdout.write((logs / f"{unit}.log").read_text())
    return 0


if __name__ == "__main__":
    name, logs, state_root, *rest = sys.argv[1:]
    if name == "systemctl":
        sys.exit(_systemctl(rest))
    if name == "systemd-run":
        sys.exit(_systemd_run(Path(state_root), rest))
    sys.exit(_journalctl(Path(logs), rest))
