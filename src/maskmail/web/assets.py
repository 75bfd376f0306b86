"""The dashboard's own files (style, script, vendored htmx), served by maskmail itself.

``static/MANIFEST.json`` pins every vendored file: where it came from and its SHA-256,
which a test checks.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from starlette.staticfiles import StaticFiles

STATIC = Path(__file__).with_name("static")
MANIFEST = STATIC / "MANIFEST.json"
PATH = "/assets"


@lru_cache(maxsize=16)  # one per file the templates name
def digest(name: str) -> str:
    return hashlib.sha256((STATIC / name).read_bytes()).hexdigest()


def asset_url(base: str, name: str) -> str:
    """The file's URL, versioned by its hash so that a new release is fetched anew."""
    return f"{base}{PATH}/{name}?v={digest(name)[:12]}"


def files() -> StaticFiles:
    return StaticFiles(directory=STATIC)
