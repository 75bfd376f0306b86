"""docs/operations.md: the dashboard imports, and every metric it names exists."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import REGISTRY

import maskmail.metrics  # noqa: F401 (registers the metrics)

DOC = Path(__file__).parents[1] / "docs" / "operations.md"


def exported() -> set[str]:
    return {
        sample.name
        for family in REGISTRY.collect()
        if family.name.startswith("maskmail_")
        for sample in family.samples
    } | {family.name for family in REGISTRY.collect() if family.name.startswith("maskmail_")}


def test_dashboard_is_json_with_panels() -> None:
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", DOC.read_text(), re.S)]
    [dashboard] = [b for b in blocks if "panels" in b]
    assert all(panel["targets"] for panel in dashboard["panels"])


def test_every_metric_named_in_the_doc_exists() -> None:
    named = set(re.findall(r"maskmail_[a-z_]+", DOC.read_text()))
    suffixes = ("_bucket", "_count", "_sum", "_total", "_created")
    known = exported()
    missing = {
        name
        for name in named
        if name not in known and not any(name.removesuffix(s) in known for s in suffixes)
    }
    assert len(named) >= 5 and not missing, missing
