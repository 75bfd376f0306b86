"""docs/operations.md: the dashboard and the alert rules parse, and every metric and label
their queries name is one maskmail exports (tests/e2e/test_metrics.py checks them against
a real process's /metrics too)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import REGISTRY

import maskmail.metrics  # noqa: F401 (registers the metrics)

DOC = Path(__file__).parents[1] / "docs" / "operations.md"
METRIC = re.compile(r"\b(maskmail_[a-z_]+)(\{[^}]*\})?")
MATCHER_LABEL = re.compile(r"([a-z_]+)\s*[=!]~?")
GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
# Labels Prometheus adds to every series it scrapes.
TARGET_LABELS = frozenset({"instance", "job"})


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), re.S)


def dashboard() -> dict[str, Any]:
    found: list[dict[str, Any]] = [b for b in map(json.loads, _blocks("json")) if "panels" in b]
    [one] = found
    return one


def alert_rules() -> list[dict[str, Any]]:
    [groups] = [b for b in map(yaml.safe_load, _blocks("yaml")) if "groups" in b]
    return [rule for group in groups["groups"] for rule in group["rules"]]


def queries() -> list[str]:
    """Every PromQL expression the doc gives: the dashboard's targets and the alerts'."""
    panels = [t["expr"] for p in dashboard()["panels"] for t in p["targets"]]
    return panels + [str(rule["expr"]) for rule in alert_rules()]


def named(expr: str) -> tuple[set[str], set[str]]:
    """The maskmail metrics an expression reads, and the labels it matches or groups by."""
    metrics, labels = set(), set()
    for found in METRIC.finditer(expr):
        metrics.add(found.group(1))
        labels.update(MATCHER_LABEL.findall(found.group(2) or ""))
    for grouping in GROUPING.findall(expr):
        labels.update(label.strip() for label in grouping.split(",") if label.strip())
    return metrics, labels - TARGET_LABELS


def unknown(exprs: Iterable[str], series: Mapping[str, set[str] | None]) -> set[str]:
    """What the expressions name that ``series`` lacks: sample name -> the labels it
    carries (None: labels not known, only the name is checked)."""
    missing = set()
    for expr in exprs:
        metrics, labels = named(expr)
        for metric in metrics:
            if metric not in series:
                missing.add(metric)
            elif (known := series[metric]) is not None:
                missing.update(f"{metric}:{label}" for label in labels - known)
    return missing


SUFFIXES = {"histogram": ("_bucket", "_count", "_sum"), "counter": ("_total",), "gauge": ("",)}


def exported() -> dict[str, set[str] | None]:
    """The sample names this process's metrics expose (a labelled metric shows its labels
    only once it has a value: the e2e test checks those)."""
    return {
        family.name + suffix: None
        for family in REGISTRY.collect()
        if family.name.startswith("maskmail_")
        for suffix in SUFFIXES[family.type]
    }


def test_dashboard_and_alerts_parse() -> None:
    assert all(panel["targets"] for panel in dashboard()["panels"])
    rules = alert_rules()
    assert len(rules) >= 4 and all({"alert", "expr", "annotations"} <= r.keys() for r in rules)
    [scrape] = [b for b in map(yaml.safe_load, _blocks("yaml")) if "scrape_configs" in b]
    assert scrape["scrape_configs"][0]["job_name"] == "maskmail"


def test_every_metric_and_label_the_queries_name_exists() -> None:
    exprs = queries()
    assert len(exprs) >= 8
    assert not unknown(exprs, exported())


def test_the_check_finds_a_misspelt_metric_or_label() -> None:
    series: dict[str, set[str] | None] = {
        "maskmail_http_request_duration_seconds_count": {"method", "route", "status"}
    }
    wrong = [
        "sum(rate(maskmail_mail_message_total[5m]))",
        'sum by (path) (rate(maskmail_http_request_duration_seconds_count{code="500"}[5m]))',
    ]
    assert unknown(wrong, series) == {
        "maskmail_mail_message_total",
        "maskmail_http_request_duration_seconds_count:path",
        "maskmail_http_request_duration_seconds_count:code",
    }
    assert "maskmail_mail_messages_total" in exported()
