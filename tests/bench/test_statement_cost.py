"""bench.statement_cost runs, and the ways it compares write the same listing."""

from __future__ import annotations

import re

import pytest

from bench import statement_cost


@pytest.mark.slow
def test_statement_cost_prints_every_variant(capsys: pytest.CaptureFixture[str]) -> None:
    # main raises if the ways of writing the listing disagree with each other.
    assert statement_cost.main(["--runs", "3"]) == 0
    out = capsys.readouterr().out
    names = [*statement_cost.JSON_WAYS, "page, auto", "page counting rows, force_generic_plan"]
    for name in names:
        assert re.search(rf"^  {re.escape(name)} +[\d.]+ / +[\d.]+$", out, re.MULTILINE), name
    assert re.search(r"^SQLite, page statement: [\d.]+ us", out, re.MULTILINE)
