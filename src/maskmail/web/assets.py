"""The dashboard's own files (style, script, logo, vendored htmx), served by maskmail itself.

``static/MANIFEST.json`` pins every file the pages load: where a vendored one came from,
and the SHA-256 of each, which a test checks.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse
from starlette.staticfiles import StaticFiles

STATIC = Path(__file__).with_name("static")
MANIFEST = STATIC / "MANIFEST.json"
PATH = "/assets"
LOGO = "logo.svg"


@lru_cache(maxsize=16)  # one per file the templates name
def digest(name: str) -> str:
    return hashlib.sha256((STATIC / name).read_bytes()).hexdigest()


def asset_url(base: str, name: str) -> str:
    """The file's URL, versioned by its hash so that a new release is fetched anew."""
    return f"{base}{PATH}/{name}?v={digest(name)[:12]}"


def files() -> StaticFiles:
    return StaticFiles(directory=STATIC)


async def favicon(request: Request) -> FileResponse:
    """``/favicon.ico``, which browsers ask for on their own: the logo (SVG)."""
    return FileResponse(
        STATIC / LOGO, media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"}
    )


OWN = "maskmail@"  # how the manifest names the package of maskmail's own files


def refresh_manifest() -> list[str]:
    """Pin the current SHA-256 of each of maskmail's own files in the manifest (after
    editing one); vendored files keep their pins. Returns the names it changed."""
    manifest = json.loads(MANIFEST.read_text())
    changed = []
    for name, pin in manifest.items():
        now = hashlib.sha256((STATIC / name).read_bytes()).hexdigest()
        if pin["package"].startswith(OWN) and pin["sha256"] != now:
            pin["sha256"] = now
            changed.append(name)
    MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n")
    return changed


if __name__ == "__main__":
    print("\n".join(refresh_manifest()) or "up to date")
