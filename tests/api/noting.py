"""A DriverPool that notes every statement the app sends through it, on either of its
faces: a script handed to ``run``, or a statement on a checked-out driver."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from maskmail.store.driver import READ, Driver, DriverPool, Mode
from maskmail.store.statements import Row, Script, Statement

T = TypeVar("T")
Sent = list[tuple[str, tuple[Any, ...]]]


class NotedPool:
    """Stands in for ``app.state.drivers``; ``sent`` gets (SQLite text, arguments)."""

    def __init__(self, pool: DriverPool, sent: Sent) -> None:
        self.pool = pool
        self.sent = sent
        self.dialect = pool.dialect

    def _noted(self, script: Script[T]) -> Script[T]:
        try:
            statement, args = next(script)
            while True:
                self.sent.append((statement.sqlite, tuple(args)))
                statement, args = script.send((yield statement, args))
        except StopIteration as done:
            result: T = done.value
            return result

    async def run(self, script: Script[T], mode: Mode = READ, *, bulk: bool = False) -> T:
        return await self.pool.run(self._noted(script), mode, bulk=bulk)

    @asynccontextmanager
    async def __call__(self) -> AsyncIterator[Driver]:
        async with self.pool() as driver:
            rows, bulk_rows = driver.rows, driver.bulk_rows

            async def note(statement: Statement, *args: Any) -> Sequence[Row]:
                self.sent.append((statement.sqlite, args))
                return await rows(statement, *args)

            async def note_bulk(statement: Statement, *args: Any) -> Sequence[Row]:
                self.sent.append((statement.sqlite, args))
                return await bulk_rows(statement, *args)

            driver.rows = note  # type: ignore[method-assign]
            driver.bulk_rows = note_bulk  # type: ignore[method-assign]
            yield driver
