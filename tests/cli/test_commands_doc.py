"""The README's command table lists every command, and every command and flag another doc
uses; each entry in it is a real command of the ``maskmail`` app."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

from maskmail.cli import app

ROOT = Path(__file__).parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
# `maskmail` (or a path to it) followed by lower-case words and flags, up to a shell
# separator or the end of the code.
USE = re.compile(r"(?:^|[\s`(])(?:\S*/bin/)?maskmail((?:[ \t]+[^\s|;&)#`\"']+)*)")
WORD = re.compile(r"[a-z][a-z-]*")
FLAG = re.compile(r"--[a-z][a-z-]*")

Use = tuple[tuple[str, ...], frozenset[str]]


def code_of(text: str) -> list[str]:
    """The fenced blocks' lines and the inline code spans of a Markdown text."""
    found: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            found.append(re.sub(r"(^|\s)#.*", "", line))
        else:
            found.extend(re.findall(r"`([^`]+)`", line))
    return found


def uses_in(code: str) -> list[Use]:
    """Each ``maskmail`` command in CODE: its words and the flags given to it."""
    found = []
    for match in USE.finditer(code):
        tokens = match.group(1).split()
        words: list[str] = []
        while tokens and WORD.fullmatch(tokens[0]) and len(words) < 2:
            words.append(tokens.pop(0))
        flags = frozenset(f for t in tokens for f in FLAG.findall(t.split("=")[0]))
        found.append((tuple(words), flags))
    return found


def table_rows() -> list[str]:
    """The first column of the README's command table."""
    lines = README.read_text().splitlines()
    start = lines.index("| command | does |") + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line.split(" | ")[0])
    return rows


def table() -> dict[tuple[str, ...], set[str]]:
    """Each command the table names, with its flags; a cell's later commands may leave
    out the ``maskmail`` prefix (`user list` / `user export EMAIL`)."""
    listed: dict[tuple[str, ...], set[str]] = {}
    for cell in table_rows():
        for span in re.findall(r"`([^`]+)`", cell):
            for words, flags in uses_in(
                span if span.startswith("maskmail") else f"maskmail {span}"
            ):
                listed.setdefault(words, set()).update(flags)
    return listed


def commands() -> dict[tuple[str, ...], set[str]]:
    """Every command of the app (and the app itself, as ``()``), with its flags."""
    found: dict[tuple[str, ...], set[str]] = {}

    def walk(command: Any, path: tuple[str, ...]) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands:
            for name, sub in subcommands.items():
                walk(sub, (*path, name))
        else:
            found[path] = set()
        flags = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
        found.setdefault(path, set()).update(f for f in flags if f.startswith("--"))
        found[path].add("--help")

    walk(typer.main.get_command(app), ())
    return found


def leaves() -> set[tuple[str, ...]]:
    everything = commands()
    return {
        path
        for path in everything
        if not any(p[: len(path)] == path and p != path for p in everything)
    }


def doc_uses() -> list[tuple[str, Use]]:
    found: list[tuple[str, Use]] = []
    for path in [*DOCS, README]:
        text = path.read_text()
        if path == README:
            text = text.replace("\n".join(table_rows()), "")
        found.extend((path.name, use) for code in code_of(text) for use in uses_in(code))
    return found


def test_the_docs_use_commands_and_flags_that_the_table_lists() -> None:
    listed = table()
    # A group named alone (`maskmail key`) is listed through its commands.
    for words in list(listed):
        listed.setdefault(words[:1], set())
    top = {words[0] for words in commands() if words}
    missing = sorted(
        f"{name}: maskmail {' '.join(words)} {sorted(flags - listed.get(words, set()))}"
        for name, (words, flags) in doc_uses()
        # Any other word after "maskmail" is a name in a config file (master.cf's
        # `maskmail unix ...`), not a command.
        if (not words or words[0] in top) and (words not in listed or not flags <= listed[words])
    )
    assert missing == []


def test_the_table_lists_every_command_and_only_real_ones() -> None:
    listed, real = table(), commands()
    assert leaves() <= set(listed)
    unknown = sorted(
        f"maskmail {' '.join(words)} {sorted(flags - real.get(words, set()))}"
        for words, flags in listed.items()
        if words not in real or not flags <= real[words]
    )
    assert unknown == []


def test_the_parser_reads_commands_and_flags_out_of_code() -> None:
    assert uses_in("KEY=$(.venv/bin/maskmail key create you@example.com)") == [
        (("key", "create"), frozenset())
    ]
    assert uses_in("maskmail up --policy-port=10041 --access-log && echo") == [
        (("up",), frozenset({"--policy-port", "--access-log"}))
    ]
    assert code_of("prose maskmail up --demo and `maskmail serve`\n```\nmaskmail smtp\n```") == [
        "maskmail serve",
        "maskmail smtp",
    ]
