"""Every module's imports against the layer table of docs/architecture.md.

The table is read from the document, so the document and the code cannot drift apart:
a new import across layers fails here until the table allows it, in the open."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "src" / "maskmail"
DOC = ROOT / "docs" / "architecture.md"
HEADER = "| layer | what it is | may import |"
DOORS = frozenset({"api", "web", "mail", "cli"})
# The package's own __init__ (its version) is below everything.
ROOT_UNIT = "__init__"
EVERYTHING = "*"


def _names(cell: str) -> list[str]:
    return [name.removesuffix("/").removesuffix(".py") for name in re.findall(r"`([^`]+)`", cell)]


def layer_table() -> dict[str, frozenset[str]]:
    """Each unit (a package or top-level module) and what it may import: unit names, or
    dotted modules (``mail.plane``) for one module of another unit."""
    lines = DOC.read_text().splitlines()
    start = lines.index(HEADER) + 2
    table: dict[str, frozenset[str]] = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        unit_cell, _, allowed_cell = line.strip("|").split("|")
        if "everything" in allowed_cell:
            allowed = frozenset({EVERYTHING})
        elif "nothing of ours" in allowed_cell:
            allowed = frozenset()
        else:
            allowed = frozenset(_names(allowed_cell))
        for unit in _names(unit_cell):
            table[unit] = allowed
    return table


def _unit(module: str) -> str:
    """``maskmail.store.engine`` -> ``store``; ``maskmail.__version__`` -> the root."""
    parts = module.split(".")
    if len(parts) < 2:
        return ROOT_UNIT
    head = parts[1]
    exists = (PACKAGE / head).is_dir() or (PACKAGE / f"{head}.py").is_file()
    return head if exists else ROOT_UNIT


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """The modules of ours ``path`` imports, anywhere in it (inside functions too)."""
    module = _module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "maskmail")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            if source.split(".")[0] != "maskmail":
                continue
            # ``from maskmail.x import y``: y may be a module of its own.
            found.update(f"{source}.{a.name}" for a in node.names)
    return found


def _allowed(target: str, own: str, allowed: frozenset[str]) -> bool:
    unit = _unit(target)
    if unit in {own, ROOT_UNIT} or EVERYTHING in allowed or unit in allowed:
        return True
    dotted = target.removeprefix("maskmail.")
    return any(dotted == name or dotted.startswith(f"{name}.") for name in allowed if "." in name)


def test_every_unit_is_in_the_table() -> None:
    table = layer_table()
    units = {_unit(_module_of(path)) for path in PACKAGE.rglob("*.py")} - {ROOT_UNIT}
    assert units - table.keys() == set()
    assert table.keys() - units == set()


def test_every_import_is_one_the_table_allows() -> None:
    table = layer_table()
    wrong = sorted(
        f"{path.relative_to(PACKAGE)} imports {target}"
        for path in PACKAGE.rglob("*.py")
        if (own := _unit(_module_of(path))) != ROOT_UNIT
        for target in imports_of(path)
        if not _allowed(target, own, table[own])
    )
    assert wrong == []


def test_the_table_lets_no_door_import_another_whole() -> None:
    table = layer_table()
    assert {door: table[door] & DOORS for door in DOORS} == {door: frozenset() for door in DOORS}


def test_the_reader_finds_a_crossing() -> None:
    """The check itself: an import inside a function, across doors, is seen."""
    assert "maskmail.mail.plane.outbound_for" in imports_of(PACKAGE / "cli" / "domains.py")
    assert not _allowed("maskmail.api.deps", "web", layer_table()["web"])
    assert not _allowed("maskmail.mail.server", "cli", layer_table()["cli"])
    assert _allowed("maskmail.mail.plane", "cli", layer_table()["cli"])
