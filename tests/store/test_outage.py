"""Which database errors mean "unavailable, retry" rather than "a bug": the outage test's
race (a connection attempt while PostgreSQL stops or starts) made deterministic."""

from __future__ import annotations

import sqlite3

import asyncpg
import pytest
from sqlalchemy.exc import DBAPIError, OperationalError

from maskmail.core.errors import StoreUnavailable
from maskmail.store.engine import unavailable_on_outage


class ServerError(Exception):
    """Stands in for a driver's error carrying PostgreSQL's SQLSTATE."""

    def __init__(self, sqlstate: str) -> None:
        super().__init__(f"sqlstate {sqlstate}")
        self.sqlstate = sqlstate


def wrapped(sqlstate: str) -> DBAPIError:
    return DBAPIError("SELECT 1", None, ServerError(sqlstate))


@pytest.mark.parametrize("sqlstate", ["57P01", "57P02", "57P03", "53300", "08006", "08001"])
def test_server_going_away_or_not_ready_is_unavailable(sqlstate: str) -> None:
    with pytest.raises(StoreUnavailable), unavailable_on_outage():
        raise wrapped(sqlstate)


@pytest.mark.parametrize("sqlstate", ["42601", "23505", "22P02"])
def test_a_bad_query_is_not_an_outage(sqlstate: str) -> None:
    with pytest.raises(DBAPIError), unavailable_on_outage():
        raise wrapped(sqlstate)


@pytest.mark.parametrize(
    "error",
    [
        asyncpg.exceptions.AdminShutdownError("terminating connection"),
        asyncpg.exceptions.CannotConnectNowError("the database system is starting up"),
        asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed"),
    ],
)
def test_driver_errors_raised_directly_are_unavailable_too(error: Exception) -> None:
    # The hot routes run statements on the driver itself (store/driver.py): no DBAPIError.
    with pytest.raises(StoreUnavailable), unavailable_on_outage():
        raise error


def test_a_bad_query_on_the_driver_is_not_an_outage() -> None:
    with pytest.raises(asyncpg.PostgresSyntaxError), unavailable_on_outage():
        raise asyncpg.PostgresSyntaxError("syntax error at or near")


class AdapterError(Exception):
    """Stands in for the adapter error a checkout through the pool alone raises."""


def test_an_adapter_error_caused_by_a_refusing_server_is_unavailable() -> None:
    with pytest.raises(StoreUnavailable), unavailable_on_outage():
        raise AdapterError("not yet") from asyncpg.CannotConnectNowError("starting up")


def test_an_adapter_error_caused_by_a_bad_query_is_raised() -> None:
    with pytest.raises(AdapterError), unavailable_on_outage():
        raise AdapterError("bad") from asyncpg.PostgresSyntaxError("syntax")


def test_a_statement_on_a_connection_the_server_just_terminated_is_unavailable() -> None:
    # What asyncpg raises when PostgreSQL's shutdown notice is still being consumed.
    with pytest.raises(StoreUnavailable), unavailable_on_outage():
        raise asyncpg.InternalClientError("cannot switch to state 12; another operation (2)")


def sqlite_error(code: int, message: str) -> sqlite3.OperationalError:
    error = sqlite3.OperationalError(message)
    error.sqlite_errorcode = code
    return error


OUTAGES = [
    sqlite_error(sqlite3.SQLITE_BUSY, "database is locked"),
    sqlite_error(sqlite3.SQLITE_LOCKED, "database table is locked"),
    sqlite_error(sqlite3.SQLITE_IOERR_SHORT_READ, "disk I/O error"),
    sqlite_error(sqlite3.SQLITE_CANTOPEN, "unable to open database file"),
]
MISTAKES = [
    sqlite_error(sqlite3.SQLITE_ERROR, "no such table: addresses"),
    sqlite_error(sqlite3.SQLITE_READONLY, "attempt to write a readonly database"),
]


@pytest.mark.parametrize("error", OUTAGES)
def test_sqlite_busy_locked_io_and_cannot_open_are_unavailable(error: Exception) -> None:
    with pytest.raises(StoreUnavailable), unavailable_on_outage():
        raise error
    with pytest.raises(StoreUnavailable), unavailable_on_outage():
        raise OperationalError("SELECT 1", None, error)


@pytest.mark.parametrize("error", MISTAKES)
def test_other_sqlite_errors_are_not_an_outage(error: Exception) -> None:
    with pytest.raises(sqlite3.OperationalError), unavailable_on_outage():
        raise error
    with pytest.raises(OperationalError), unavailable_on_outage():
        raise OperationalError("SELECT 1", None, error)


def test_sqlite_codes_come_from_the_driver() -> None:
    # The classification reads what sqlite3 really sets on its errors.
    with sqlite3.connect(":memory:") as db, pytest.raises(sqlite3.OperationalError) as missing:
        db.execute("SELECT * FROM addresses")
    assert missing.value.sqlite_errorcode == sqlite3.SQLITE_ERROR
    with pytest.raises(StoreUnavailable), unavailable_on_outage():
        sqlite3.connect("/nonexistent/directory/maskmail.db")
