"""What a transaction says to the driver (store/driver.py runs it): a statement's text
for each dialect, and a *script*, the generator a store module writes a transaction as.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy.dialects.postgresql import asyncpg as asyncpg_dialect
from sqlalchemy.dialects.sqlite import pysqlite as sqlite_dialect
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

Row = Sequence[Any]
_PLACEHOLDER = re.compile(r"\?(\d*)")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement's text for SQLite and for PostgreSQL.

    Both are written with ``?`` for the next argument, or ``?N`` for argument N again;
    asyncpg's ``$N`` numbering is done here. A dialect left out is refused when its text
    is asked for, rather than run as an empty statement that returns no rows.
    """

    sqlite: str
    postgresql: str

    @classmethod
    def portable(cls, text: str) -> Statement:
        """The same text for both dialects."""
        return cls(text, numbered(text))

    @classmethod
    def per_dialect(cls, *, sqlite: str = "", postgresql: str = "") -> Statement:
        return cls(sqlite, numbered(postgresql))

    @classmethod
    def from_core(cls, statement: ClauseElement, *order: str, only: str = "") -> Statement:
        """A SQLAlchemy Core statement, compiled once for each dialect, or for ``only``
        that one (the other's text stays empty, so refused). Its parameters are passed
        by position in ``order``: checked here, where the statement is built."""
        texts = {}
        dialects = (sqlite_dialect.dialect(), asyncpg_dialect.dialect())  # type: ignore[no-untyped-call]
        for dialect in dialects:
            if only and dialect.name != only:
                continue
            compiled = statement.compile(dialect=dialect)
            assert isinstance(compiled, SQLCompiler)
            if tuple(compiled.positiontup or ()) != order:
                raise ValueError(f"parameters are {compiled.positiontup}, not {order}")
            texts[dialect.name] = str(compiled)
        return cls(texts.get("sqlite", ""), texts.get("postgresql", ""))

    def text(self, dialect: str) -> str:
        found = {"sqlite": self.sqlite, "postgresql": self.postgresql}.get(dialect)
        if not found:
            raise NotImplementedError(f"this statement has no {dialect} text")
        return found


def numbered(text: str) -> str:
    """``?`` placeholders as ``$1, $2, ...``, and ``?N`` as ``$N`` (our statements have no
    ``?`` in literals)."""
    count = 0

    def number(match: re.Match[str]) -> str:
        nonlocal count
        if match.group(1):
            return f"${match.group(1)}"
        count += 1
        return f"${count}"

    return _PLACEHOLDER.sub(number, text)


# One statement of a script, with its arguments in order.
Query = tuple[Statement, Sequence[Any]]
# A transaction as a store module writes it (see the module's docstring).
Script = Generator[Query, Sequence[Row], T]
