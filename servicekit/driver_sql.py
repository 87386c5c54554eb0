"""Plain SQL on the psycopg connection under a SQLAlchemy session, for hot paths.

SQLAlchemy's execution machinery costs about twice the driver's own per statement (457
against 215 µs of CPU, measured on this project's checkout), and a checkout runs seven
statements. Hot paths therefore hand fixed SQL to the driver, in the session's own
transaction, and write their effects in one pipeline: one round trip and one wake-up for
several inserts. Everything else keeps SQLAlchemy.

Driver errors are raised as SQLAlchemy's (IntegrityError, OperationalError...), with the
psycopg error as `.orig`, so the code that tells a duplicate from an outage reads them
the same way whichever path wrote.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any, cast

import psycopg
from psycopg.rows import namedtuple_row
from psycopg.types.json import Jsonb
from sqlalchemy import Table
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

Params = Mapping[str, Any]

__all__ = [
    "Jsonb",
    "Queued",
    "commit_in_pipeline",
    "constraint_of",
    "execute",
    "fetch_all",
    "fetch_one",
    "insert_sql",
    "pipeline",
    "queue",
    "select_sql",
    "update_sql",
]


_DRIVER = "servicekit.driver_connection"  # (transaction, connection, committed) in session.info


async def driver_connection(session: AsyncSession) -> psycopg.AsyncConnection[Any]:
    """The session's connection as psycopg sees it; the transaction is the same one.

    Kept with the session for as long as its transaction lasts: asking SQLAlchemy for it
    crosses into a greenlet twice, which cost more than some of the statements.
    """
    transaction = session.sync_session.get_transaction()
    cached = session.info.get(_DRIVER)
    if cached is not None and transaction is not None and cached[0] is transaction:
        if cached[2]:
            raise RuntimeError("this transaction has committed; nothing may run after it")
        return cast(psycopg.AsyncConnection[Any], cached[1])
    connection = await session.connection()
    raw = await connection.get_raw_connection()
    driver = raw.driver_connection
    assert isinstance(driver, psycopg.AsyncConnection), "servicekit runs on psycopg"
    session.info[_DRIVER] = (session.sync_session.get_transaction(), driver, False)
    return driver


async def execute(session: AsyncSession, sql: str, params: Params) -> None:
    """Runs a statement whose result nobody reads; inside `pipeline` it only queues."""
    driver = await driver_connection(session)
    with _as_sqlalchemy_errors(sql, params):
        await driver.execute(sql, params)


async def fetch_one(session: AsyncSession, sql: str, params: Params) -> Any | None:
    """The first row of a query that returns at most one, or None."""
    rows = await fetch_all(session, sql, params)
    return rows[0] if rows else None


async def fetch_all(session: AsyncSession, sql: str, params: Params) -> list[Any]:
    """Every row as a named tuple (columns as attributes)."""
    driver = await driver_connection(session)
    with _as_sqlalchemy_errors(sql, params):
        async with driver.cursor(row_factory=namedtuple_row) as cursor:
            await cursor.execute(sql, params)
            return await cursor.fetchall()


@asynccontextmanager
async def pipeline(session: AsyncSession) -> AsyncIterator[None]:
    """Statements executed in the block travel together; errors surface when it ends.

    A constraint violation of any queued statement is raised at the end of the block, so
    callers translate expected violations around the block, not around one statement.
    """
    driver = await driver_connection(session)
    with _as_sqlalchemy_errors("pipeline", None):
        async with driver.pipeline():
            yield


class Queued:
    """A query sent in a pipeline; its rows can be read once the pipeline has ended."""

    def __init__(self, cursor: psycopg.AsyncCursor[Any]) -> None:
        self._cursor = cursor

    async def rows(self) -> list[Any]:
        return await self._cursor.fetchall()

    async def first(self) -> Any | None:
        rows = await self.rows()
        return rows[0] if rows else None


async def queue(session: AsyncSession, sql: str, params: Params) -> Queued:
    """Sends a query inside `pipeline` without waiting for it: several queries travel in
    one round trip, and each one's rows are read after the block."""
    driver = await driver_connection(session)
    cursor = driver.cursor(row_factory=namedtuple_row)
    with _as_sqlalchemy_errors(sql, params):
        await cursor.execute(sql, params)
    return Queued(cursor)


async def commit_in_pipeline(session: AsyncSession) -> None:
    """Queues the transaction's COMMIT as the pipeline's last statement, so the writes
    and the commit share one round trip (`Connection.commit()` would sync on its own).

    The session's own commit then finds nothing left to commit. Nothing may run on the
    session after it: the driver would begin another transaction.
    """
    driver = await driver_connection(session)
    with _as_sqlalchemy_errors("COMMIT", None):
        await driver.execute("COMMIT", prepare=False)
    transaction, _, _ = session.info[_DRIVER]
    session.info[_DRIVER] = (transaction, driver, True)


def constraint_of(error: IntegrityError) -> str | None:
    """The constraint a violation names, whether SQLAlchemy or this module raised it:
    callers accept only the violation they expect, and any other is a real error."""
    return getattr(getattr(error.orig, "diag", None), "constraint_name", None)


@contextmanager
def _as_sqlalchemy_errors(sql: str, params: Params | None) -> Iterator[None]:
    try:
        yield
    except psycopg.Error as error:
        raise DBAPIError.instance(sql, dict(params or {}), error, psycopg.Error) from error


# Statements built once per table from its SQLAlchemy `Table`, so no repository writes a
# table or column name by hand; a misspelt column fails at import, not on the first request.


def insert_sql(table: Table, columns: tuple[str, ...]) -> str:
    """An INSERT of the named columns with named placeholders."""
    values = ", ".join(f"%({name})s" for name in _checked(table, columns))
    return f"INSERT INTO {_quoted(table.name)} ({_names(columns)}) VALUES ({values})"


def select_sql(
    table: Table, columns: tuple[str, ...], by: tuple[str, ...], for_update: bool = False
) -> str:
    """A SELECT of the named columns where each `by` column equals its named placeholder."""
    lock = " FOR UPDATE" if for_update else ""
    where = _equal(table, by, " AND ")
    return (
        f"SELECT {_names(_checked(table, columns))} FROM {_quoted(table.name)} WHERE {where}{lock}"
    )


def update_sql(table: Table, columns: tuple[str, ...], by: tuple[str, ...]) -> str:
    """An UPDATE setting the named columns where each `by` column equals its placeholder."""
    sets = _equal(table, columns, ", ")
    return f"UPDATE {_quoted(table.name)} SET {sets} WHERE {_equal(table, by, ' AND ')}"


def _checked(table: Table, columns: tuple[str, ...]) -> tuple[str, ...]:
    for name in columns:
        table.c[name]  # raises KeyError for a column the table does not have
    return columns


def _equal(table: Table, columns: tuple[str, ...], joiner: str) -> str:
    return joiner.join(f"{_quoted(name)} = %({name})s" for name in _checked(table, columns))


def _names(columns: tuple[str, ...]) -> str:
    return ", ".join(_quoted(name) for name in columns)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
