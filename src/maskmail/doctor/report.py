"""One line of ``maskmail doctor``'s report."""

from __future__ import annotations

from dataclasses import dataclass

# Network checks answer in milliseconds when things work; a whole check gets this long.
TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the report: ``detail`` is what was found, or, failing, the fix."""

    name: str
    ok: bool
    detail: str

    def json(self) -> dict[str, object]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}
