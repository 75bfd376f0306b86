"""Images of deploy/ built and run without a registry or a container engine: debootstrap
makes the Debian root the Containerfiles start FROM, podman tags it under that name,
buildah builds (``bud``) and runs (``run``) with chroot isolation on the host's network.

The Debian root is kept between runs (under the user's cache directory, keyed by the
FROM name), and so are podman's base image and buildah's layers, so a build whose
inputs did not change takes seconds."""

from __future__ import annotations

import json
import os
import re
import shutil
import ssl
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.processes import stop_session

ROOT = Path(__file__).resolve().parents[1]
MIRROR = "http://deb.debian.org/debian"
BUILD_TIMEOUT = 1800
TOOLS = ("buildah", "podman", "debootstrap")


def missing_tools() -> list[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def base_images(containerfile: Path) -> set[str]:
    """The images ``containerfile``'s stages start FROM (not its own stages)."""
    stages: set[str] = set()
    bases: set[str] = set()
    for line in containerfile.read_text().splitlines():
        found = re.match(r"FROM\s+(\S+)(?:\s+AS\s+(\S+))?\s*$", line, re.I)
        if found:
            if found.group(1) not in stages:
                bases.add(found.group(1))
            if found.group(2):
                stages.add(found.group(2))
    return bases


def _run(*args: str, timeout: float = BUILD_TIMEOUT) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:3])} failed: {done.stderr[-3000:]}")
    return done


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "maskmail-tests" / "debootstrap"


def _debian_tarball(name: str) -> Path:
    """A tarball of a Debian root standing for ``name`` (``debian:<suite>-slim``), made
    by debootstrap once and kept."""
    suite = re.fullmatch(r"(?:.*/)?debian:([a-z]+)(?:-slim)?", name)
    if suite is None:
        raise ValueError(f"{name} is not a Debian image this helper can make")
    tarball = cache_dir() / (re.sub(r"[^A-Za-z0-9.-]+", "_", name) + ".tar")
    if tarball.exists():
        return tarball
    tarball.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="maskmail-debootstrap-") as tmp:
        root = Path(tmp) / "root"
        _run("debootstrap", "--variant=minbase", suite.group(1), str(root), MIRROR)
        # As Debian's own slim image: its updates and security suites, no package cache.
        (root / "etc/apt/sources.list").write_text(
            f"deb {MIRROR} {suite.group(1)} main\n"
            f"deb {MIRROR} {suite.group(1)}-updates main\n"
            f"deb {MIRROR}-security {suite.group(1)}-security main\n"
        )
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for path in (root / cache).glob("*"):
                if path.is_file():
                    path.unlink()
        # Written beside it and renamed: a run beside this one never reads half a root.
        partial = tarball.parent / f".{tarball.name}.{os.getpid()}"
        _run("tar", "-C", str(root), "-cf", str(partial), ".")
        partial.replace(tarball)
    return tarball


def ensure_base(name: str) -> None:
    """Make ``name`` exist in podman's store (buildah shares it)."""
    exists = subprocess.run(["podman", "image", "exists", name], capture_output=True, check=False)
    if exists.returncode == 0:
        return
    _run("podman", "import", str(_debian_tarball(name)), name)


def ca_bundle() -> Path | None:
    """The host's certificate bundle, which the build's downloads must trust here."""
    found = os.environ.get("SSL_CERT_FILE") or ssl.get_default_verify_paths().cafile
    return Path(found) if found and Path(found).is_file() else None


def image_id(tag: str) -> str | None:
    shown = subprocess.run(
        ["podman", "image", "inspect", "--format", "{{.Id}}", tag],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return shown.stdout.strip() if shown.returncode == 0 else None


def build(containerfile: Path, tag: str, context: Path = ROOT) -> None:
    """Build ``containerfile`` as ``tag``; the image it replaces is removed."""
    for base in base_images(containerfile):
        ensure_base(base)
    before = image_id(tag)
    command = ["buildah", "bud", "--isolation", "chroot", "--pull=never", "--layers"]
    command += ["--format", "docker", "-f", str(containerfile), "-t", tag]
    bundle = ca_bundle()
    if bundle is not None:
        command += ["--secret", f"id=ca,src={bundle}"]
    _run(*command, str(context))
    if before is not None and before != image_id(tag):
        subprocess.run(["buildah", "rmi", before], capture_output=True, check=False)


def inspect(tag: str) -> dict[str, Any]:
    """The image's Docker-format configuration (user, entrypoint, health check, ...)."""
    shown = _run("buildah", "inspect", "--type", "image", tag)
    config: dict[str, Any] = json.loads(shown.stdout)["Docker"]["config"]
    return config


@contextmanager
def container(tag: str) -> Iterator[str]:
    """A working container of ``tag``; removed afterwards."""
    name = _run("buildah", "from", "--pull-never", tag).stdout.strip().splitlines()[-1]
    try:
        yield name
    finally:
        subprocess.run(["buildah", "rm", name], capture_output=True, check=False)


def run_command(name: str, argv: Sequence[str], env: dict[str, str] | None = None) -> list[str]:
    """``buildah run`` of ``argv`` in container ``name``, as the image's user, on the
    host's network."""
    command = ["buildah", "run", "--isolation", "chroot"]
    for key, value in (env or {}).items():
        command += ["--env", f"{key}={value}"]
    return [*command, name, "--", *argv]


@contextmanager
def running(name: str, argv: Sequence[str], env: dict[str, str], log: Path) -> Iterator[None]:
    """``argv`` running in container ``name`` until the block ends."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            run_command(name, argv, env), stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            yield
        finally:
            stop_session(proc, timeout=30)
