"""Plain SQL on the psycopg connection under a SQLAlchemy session, for hot paths.

SQLAlchemy's execution machinery costs about twice the driver's own per statement (457
against 215 µs of CPU, measured on this project's checkout), and a checkout runs seven
statements. Hot paths therefore hand fixed SQL to the driver, in the session's own
transaction, and send several statements in one pipeline: one message, one round trip
and one wake-up for all of them (libpq's pipeline mode still sends each statement on its
own, and those sends were 40 % of a checkout's CPU). Everything else keeps SQLAlchemy.

Driver errors are raised as SQLAlchemy's (IntegrityError, OperationalError...), with the
psycopg error as `.orig`, so the code that tells a duplicate from an outage reads them
the same way whichever path wrote.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import namedtuple_row
from psycopg.types.json import Jsonb
from sqlalchemy import Table
from sqlalchemy.engine.interfaces import PoolProxiedConnection
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from servicekit import driver_pool, tracing

Params = Mapping[str, Any]

__all__ = [
    "Jsonb",
    "Queued",
    "alone",
    "any_row",
    "autocommit",
    "commit_in_pipeline",
    "constraint_of",
    "end_transaction",
    "execute",
    "fetch_all",
    "fetch_one",
    "hand_over",
    "insert_sql",
    "pipeline",
    "queue",
    "select_sql",
    "transaction",
    "update_sql",
]


@dataclass
class _Held:
    """The session's driver connection, kept in `session.info` while its transaction lasts."""

    transaction: object  # the session's transaction, or _HANDED_OVER
    driver: psycopg.AsyncConnection[Any]
    kept: dict[Any, Any]  # what is cached for this connection, as long as it lives
    committed: bool = False


_DRIVER = "servicekit.driver_connection"
_HANDED_OVER = object()  # the transaction of a connection the session was given up front
_BINDER = "servicekit.binder"
_CURSOR = "servicekit.cursor"


async def driver_connection(session: AsyncSession) -> psycopg.AsyncConnection[Any]:
    """The session's connection as psycopg sees it; the transaction is the same one."""
    return (await _held(session)).driver


async def _held(session: AsyncSession) -> _Held:
    # Kept with the session for as long as its transaction lasts: asking SQLAlchemy for
    # the connection crosses into a greenlet twice, which cost more than some statements.
    held: _Held | None = session.info.get(_DRIVER)
    if held is not None and (
        held.transaction is _HANDED_OVER
        or held.transaction is session.sync_session.get_transaction()
    ):
        if held.committed:
            raise RuntimeError("this transaction has committed; nothing may run after it")
        return held
    connection = await session.connection()
    pooled = await connection.get_raw_connection()
    held = _Held(session.sync_session.get_transaction(), _driver_of(pooled), pooled.info)
    session.info[_DRIVER] = held
    return held


def hand_over(session: AsyncSession, lent: driver_pool.Lent) -> None:
    """Gives a session the pooled connection it runs on up front, so the hot path never
    asks SQLAlchemy for it (see `transaction`)."""
    session.info[_DRIVER] = _Held(_HANDED_OVER, lent.driver, lent.kept)


def autocommit(engine: AsyncEngine) -> AbstractAsyncContextManager[driver_pool.Lent]:
    """A connection in autocommit mode from the engine's driver pool, without an ORM
    session (servicekit.driver_pool); one that comes back broken or inside a
    transaction is closed, not lent again."""
    return driver_pool.of(engine).connection()


@asynccontextmanager
async def transaction(engine: AsyncEngine) -> AsyncIterator[AsyncSession]:
    """A transaction on a connection of the driver pool, without an ORM session: the
    session yielded is bound to nothing and carries the connection (`hand_over`). The
    first `pipeline` sends BEGIN with its statements; whatever is still open at the end
    is committed, or rolled back on an exception."""
    async with autocommit(engine) as lent:
        session = lent.session  # the connection's own, bound to nothing
        hand_over(session, lent)
        try:
            yield session
            await end_transaction(session, commit=True)
        except BaseException:
            await end_transaction(session, commit=False)
            raise


async def alone(engine: AsyncEngine, sql: str, params: Params) -> list[Any]:
    """The rows of one statement that is a transaction by itself (autocommit), in one
    round trip: a session's BEGIN and COMMIT around it would be two more."""
    async with autocommit(engine) as lent:
        return await _rows(lent.driver, lent.kept, sql, params)


async def any_row(engine: AsyncEngine, sql: str, params: Params) -> bool:
    """Whether a query finds a row, asked outside any transaction in one round trip."""
    async with autocommit(engine) as lent:
        with _as_sqlalchemy_errors(sql, params):
            cursor = await lent.driver.execute(sql, params, prepare=False)
            return await cursor.fetchone() is not None


def _driver_of(pooled: PoolProxiedConnection) -> psycopg.AsyncConnection[Any]:
    driver = pooled.driver_connection
    assert isinstance(driver, psycopg.AsyncConnection), "servicekit runs on psycopg"
    return driver


async def end_transaction(session: AsyncSession, commit: bool) -> None:
    """Commits or rolls back the transaction a pipeline began by hand, if still open."""
    held: _Held | None = session.info.get(_DRIVER)
    if held is None or held.driver.info.transaction_status == TransactionStatus.IDLE:
        return
    if commit:
        with _as_sqlalchemy_errors("COMMIT", None):
            await held.driver.execute("COMMIT", prepare=False)
        return
    with contextlib.suppress(psycopg.Error):  # a broken connection: the pool discards it
        await held.driver.execute("ROLLBACK", prepare=False)


async def execute(session: AsyncSession, sql: str, params: Params) -> None:
    """Runs a statement whose result nobody reads; inside `pipeline` it only queues."""
    batch = session.info.get(_BATCH)
    if batch is not None:
        batch.add(sql, params)
        return
    driver = await driver_connection(session)
    with _as_sqlalchemy_errors(sql, params):
        await driver.execute(sql, params)


async def fetch_one(session: AsyncSession, sql: str, params: Params) -> Any | None:
    """The first row of a query that returns at most one, or None."""
    rows = await fetch_all(session, sql, params)
    return rows[0] if rows else None


async def fetch_all(session: AsyncSession, sql: str, params: Params) -> list[Any]:
    """Every row as a named tuple (columns as attributes)."""
    held = await _held(session)
    return await _rows(held.driver, held.kept, sql, params)


async def _rows(
    driver: psycopg.AsyncConnection[Any], kept: dict[Any, Any], sql: str, params: Params
) -> list[Any]:
    # One cursor per connection, kept with it by the pool: a cursor keeps the adapters it
    # chose for a statement's values while it runs the same statement again, and making a
    # cursor per statement cost a quarter of a one-statement checkout's client CPU.
    cursor = kept.get(_CURSOR)
    if cursor is None or cursor.connection is not driver:
        cursor = kept[_CURSOR] = driver.cursor(row_factory=namedtuple_row)
    with _as_sqlalchemy_errors(sql, params):
        await cursor.execute(sql, params)
        return await cursor.fetchall()


class Queued:
    """A query sent in a pipeline; its rows can be read once the pipeline has ended."""

    def __init__(self, rows: list[Any] | None = None) -> None:
        self._rows = rows

    def arrived(self, rows: list[Any]) -> None:
        self._rows = rows

    def rows(self) -> list[Any]:
        if self._rows is None:
            raise RuntimeError("a queued query's rows are there once its pipeline has ended")
        return self._rows

    def first(self) -> Any | None:
        rows = self.rows()
        return rows[0] if rows else None


class _Batch:
    """Statements with their values bound, to be sent as one message.

    Bound on the client by psycopg (literals quoted by the driver, not by hand): the
    extended protocol takes one statement per message, and every message is a send
    and a wake-up of the server, which cost more than the statements themselves.
    """

    def __init__(self, held: _Held) -> None:
        # One binder per connection, kept with it by the pool: making one per batch cost
        # more than binding the values.
        binder = held.kept.get(_BINDER)
        if binder is None:
            binder = held.kept[_BINDER] = psycopg.AsyncClientCursor(held.driver)
        self._binder: psycopg.AsyncClientCursor[Any] = binder
        self.statements: list[str] = []
        self.templates: list[str] = []  # the statements as written, without the values
        self.queued: list[Queued | None] = []

    def add(self, sql: str, params: Params | None, queued: Queued | None = None) -> None:
        self.statements.append(self._binder.mogrify(sql, params))
        self.templates.append(sql)
        self.queued.append(queued)

    async def send(self, driver: psycopg.AsyncConnection[Any]) -> None:
        if not self.statements:
            return
        async with driver.cursor(row_factory=namedtuple_row) as cursor:
            with tracing.database_batch(self.templates):
                await cursor.execute(";\n".join(self.statements), prepare=False)
            for queued in self.queued:
                if queued is not None:
                    queued.arrived(await cursor.fetchall() if cursor.description else [])
                cursor.nextset()


_BATCH = "servicekit.batch"  # the open pipeline's batch, in session.info


@asynccontextmanager
async def pipeline(session: AsyncSession) -> AsyncIterator[None]:
    """Statements executed or queued in the block travel together, in one message and
    one round trip, when it ends; they run in order, and errors surface then.

    A constraint violation of any of them is raised at the end of the block, so callers
    translate expected violations around the block, not around one statement. A block
    inside another joins it. On a connection in autocommit mode with no transaction open,
    the block begins one.
    """
    if session.info.get(_BATCH) is not None:
        yield
        return
    held = await _held(session)
    driver = held.driver
    batch = session.info[_BATCH] = _Batch(held)
    if driver.autocommit and driver.info.transaction_status == TransactionStatus.IDLE:
        # The session left BEGIN to its first statements (see UnitOfWorkFactory.
        # transaction_on_driver); psycopg's own would take a round trip of its own.
        batch.add("BEGIN", None)
    try:
        yield
    finally:
        del session.info[_BATCH]
    with _as_sqlalchemy_errors("pipeline", None):
        await batch.send(driver)


async def queue(session: AsyncSession, sql: str, params: Params) -> Queued:
    """A query whose rows are read later: inside `pipeline` it travels with the others
    and its rows are there once the block has ended; outside, it runs at once."""
    batch = session.info.get(_BATCH)
    if batch is None:
        return Queued(await fetch_all(session, sql, params))
    queued = Queued()
    batch.add(sql, params, queued)
    return queued


async def commit_in_pipeline(session: AsyncSession) -> None:
    """Queues the transaction's COMMIT as the pipeline's last statement, so the writes
    and the commit share one round trip.

    The session's own commit then finds nothing left to commit. Nothing may run on the
    session after it: the driver would begin another transaction.
    """
    batch = session.info.get(_BATCH)
    if batch is None:
        raise RuntimeError("commit_in_pipeline belongs inside a pipeline")
    batch.add("COMMIT", None)
    session.info[_DRIVER].committed = True


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


def update_sql(
    table: Table, columns: tuple[str, ...], by: tuple[str, ...], now: tuple[str, ...] = ()
) -> str:
    """An UPDATE setting the named columns where each `by` column equals its placeholder,
    and the `now` columns to the transaction's time."""
    stamped = [f"{_quoted(name)} = now()" for name in _checked(table, now)]
    sets = ", ".join([_equal(table, columns, ", "), *stamped])
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
