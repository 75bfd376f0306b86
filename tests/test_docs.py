"""What the docs and the code's comments tell a newcomer points at things that exist."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import bench.__main__ as bench_run

from bench import report

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "src" / "maskmail"
# A file of ours named in prose: `store/driver.py`, `api/routes/shared.py`, `bench/run.py`.
NAMED_FILE = re.compile(
    r"\b(?:api|store|mail|core|bench|tests|deploy|scripts)(?:/[A-Za-z0-9_.]+)*/[A-Za-z0-9_]+\.py\b"
)


def _texts() -> dict[Path, str]:
    files = [*PACKAGE.rglob("*.py"), *(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
    return {path: path.read_text() for path in files}


def test_every_file_the_docs_and_comments_name_exists() -> None:
    missing = {
        f"{path.relative_to(ROOT)}: {name}"
        for path, text in _texts().items()
        for name in NAMED_FILE.findall(text)
        if "NNNN" not in name  # architecture.md's pattern for a new migration
        and not (PACKAGE / name).exists()
        and not (ROOT / name).exists()
    }
    assert missing == set()


# The product's own notes live outside the repository: a reader of docs/ has none of them.
OUTSIDE = re.compile(r"(?<!\.)\.\./|\bSPEC\b|SPEC\.md|DESIGN\.md|STYLE\.md|/work/")


def _handwritten(path: Path) -> str:
    # bench/run rewrites the block between these markers (its lines come from bench/).
    text = path.read_text()
    head, marker, rest = text.partition(report.BEGIN)
    return head + rest.partition(report.END)[2] if marker else text


def test_the_docs_cite_nothing_outside_the_repository() -> None:
    cited = {
        f"{path.relative_to(ROOT)}: {found.group(0)}"
        for path in [*(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
        for found in OUTSIDE.finditer(_handwritten(path))
    }
    assert cited == set()
    # ... nor will the block bench/run writes next.
    assert OUTSIDE.search(inspect.getsource(bench_run.publish)) is None


# A measurement: "12 ms", "3,400 req/s", "took 38 s", "4x faster", "60 %", "doubled".
FIGURE = re.compile(
    r"\b\d[\d,.]*\s*(?:ms|µs|req/s|requests/s|queries/s)\b"
    r"|\btook \d"
    r"|\d\s*[x\u00d7] (?:faster|slower)"
    r"|\b\d[\d,.]*\s?%(?=[\s).,;:]|$)"
    r"|\b(?:doubled|halved|tripled)\b"
)


def test_code_comments_carry_no_figures() -> None:
    # Comments say why; how fast goes to docs/benchmarks.md (or the page the finding is on).
    found = {
        f"{path.relative_to(ROOT)}: {hit.group(0)}"
        for path in PACKAGE.rglob("*.py")
        for hit in FIGURE.finditer(path.read_text())
    }
    assert found == set()
