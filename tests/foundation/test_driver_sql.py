"""Driver SQL shares the session's transaction and reports errors as SQLAlchemy does."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, cast

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, IntegrityError, UnboundExecutionError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import db, driver_sql
from servicekit.unit_of_work import Effects, UnitOfWork, UnitOfWorkFactory

INSERT = "INSERT INTO seats (seat, holder) VALUES (%(seat)s, %(holder)s)"


@pytest.fixture
async def sessions(
    new_database: Callable[[str], str],
) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = db.make_engine(new_database("driver_sql"))
    async with engine.begin() as connection:
        await connection.execute(
            text("CREATE TABLE seats (seat int CONSTRAINT seats_once PRIMARY KEY, holder text)")
        )
    yield db.make_session_factory(engine)
    await engine.dispose()


async def _holders(sessions: async_sessionmaker[AsyncSession]) -> list[str]:
    async with sessions() as session:
        rows = await session.execute(text("SELECT holder FROM seats ORDER BY seat"))
        return [row.holder for row in rows]


async def test_pipelined_writes_commit_or_roll_back_with_the_session(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with sessions() as session, session.begin():
        async with driver_sql.pipeline(session):
            await driver_sql.execute(session, INSERT, {"seat": 1, "holder": "ada"})
            await driver_sql.execute(session, INSERT, {"seat": 2, "holder": "bo"})
        await session.execute(text("INSERT INTO seats VALUES (3, 'cy')"))  # SQLAlchemy, same tx
    with pytest.raises(RuntimeError):
        async with sessions() as session, session.begin():
            await driver_sql.execute(session, INSERT, {"seat": 4, "holder": "di"})
            raise RuntimeError("the caller gives up")

    assert await _holders(sessions) == ["ada", "bo", "cy"]


async def test_a_violation_in_a_pipeline_is_a_sqlalchemy_integrity_error_naming_the_constraint(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    with pytest.raises(IntegrityError) as raised:
        async with sessions() as session, session.begin(), driver_sql.pipeline(session):
            await driver_sql.execute(session, INSERT, {"seat": 1, "holder": "ada"})
            await driver_sql.execute(session, INSERT, {"seat": 1, "holder": "eve"})

    assert driver_sql.constraint_of(raised.value) == "seats_once"
    assert await _holders(sessions) == []  # the whole transaction rolled back


async def test_a_violation_outside_a_pipeline_is_raised_by_the_statement(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with sessions() as session, session.begin():
        await driver_sql.execute(session, INSERT, {"seat": 1, "holder": "ada"})
    async with sessions() as session:  # closing it without a commit rolls back
        with pytest.raises(IntegrityError) as raised:
            await driver_sql.execute(session, INSERT, {"seat": 1, "holder": "eve"})
    assert driver_sql.constraint_of(raised.value) == "seats_once"

    async with sessions() as session:
        row = await driver_sql.fetch_one(session, "SELECT holder FROM seats WHERE seat = 1", {})
    assert row is not None and row.holder == "ada"


# A hot path's transaction in few round trips: its reads sent together, then its writes with
# its COMMIT (servicekit.unit_of_work).
CLAIM = INSERT + " ON CONFLICT DO NOTHING RETURNING seat"
HOLDER = "SELECT holder FROM seats WHERE seat = %(seat)s FOR UPDATE"


def _uows(sessions: async_sessionmaker[AsyncSession]) -> UnitOfWorkFactory[UnitOfWork]:
    return UnitOfWorkFactory(sessions, lambda session: UnitOfWork(session, cast(Effects, None)))


Opening = Callable[[UnitOfWorkFactory[UnitOfWork]], AbstractAsyncContextManager[UnitOfWork]]
OPENINGS: dict[str, Opening] = {
    "session transaction": lambda uows: uows.transaction(),
    "on the driver": lambda uows: uows.transaction_on_driver(),
}
each_opening = pytest.mark.parametrize("opening", OPENINGS.values(), ids=OPENINGS.keys())


async def _autocommit_left_on_the_pool(sessions: async_sessionmaker[AsyncSession]) -> bool:
    """Whether any pooled connection is still in autocommit mode, which would make the
    next transaction on it commit statement by statement."""
    opened = [sessions() for _ in range(3)]
    try:
        drivers = [await driver_sql.driver_connection(session) for session in opened]
        return any(driver.autocommit for driver in drivers)
    finally:
        for session in opened:
            await session.close()


@each_opening
async def test_reads_sent_together_and_the_last_writes_make_one_transaction(
    sessions: async_sessionmaker[AsyncSession], opening: Opening
) -> None:
    async with opening(_uows(sessions)) as uow:
        async with uow.reads_together():
            claimed = await driver_sql.queue(uow.session, CLAIM, {"seat": 1, "holder": "ada"})
            holder = await driver_sql.queue(uow.session, HOLDER, {"seat": 1})
        assert claimed.first() is not None
        row = holder.first()
        assert row is not None and row.holder == "ada"  # sent after the claim: it sees it
        async with uow.last_writes():
            await driver_sql.execute(uow.session, INSERT, {"seat": 2, "holder": "bo"})
        with pytest.raises(RuntimeError):  # the transaction has committed
            await driver_sql.execute(uow.session, INSERT, {"seat": 3, "holder": "cy"})

    assert await _holders(sessions) == ["ada", "bo"]
    assert not await _autocommit_left_on_the_pool(sessions)


@each_opening
async def test_a_refusal_after_reads_sent_together_rolls_their_writes_back(
    sessions: async_sessionmaker[AsyncSession], opening: Opening
) -> None:
    with pytest.raises(LookupError):
        async with opening(_uows(sessions)) as uow:
            async with uow.reads_together():
                await driver_sql.queue(uow.session, CLAIM, {"seat": 1, "holder": "ada"})
            await driver_sql.execute(uow.session, INSERT, {"seat": 2, "holder": "bo"})
            raise LookupError("the seat is not for sale")

    assert await _holders(sessions) == []  # the claim and the write rolled back together
    assert not await _autocommit_left_on_the_pool(sessions)


@each_opening
async def test_a_violation_among_the_last_writes_rolls_back_everything(
    sessions: async_sessionmaker[AsyncSession], opening: Opening
) -> None:
    with pytest.raises(IntegrityError) as raised:
        async with opening(_uows(sessions)) as uow:
            async with uow.reads_together():
                await driver_sql.queue(uow.session, CLAIM, {"seat": 1, "holder": "ada"})
            async with uow.last_writes():
                await driver_sql.execute(uow.session, INSERT, {"seat": 2, "holder": "bo"})
                await driver_sql.execute(uow.session, INSERT, {"seat": 2, "holder": "eve"})

    assert driver_sql.constraint_of(raised.value) == "seats_once"
    assert await _holders(sessions) == []


async def test_orm_code_on_the_driver_alone_fails_instead_of_taking_another_connection(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    with pytest.raises(UnboundExecutionError):
        async with _uows(sessions).transaction_on_driver() as uow:
            async with uow.reads_together():
                await driver_sql.queue(uow.session, CLAIM, {"seat": 1, "holder": "ada"})
            await uow.session.execute(text("INSERT INTO seats VALUES (2, 'bo')"))

    assert await _holders(sessions) == []  # the claim rolled back with the refusal
    assert not await _autocommit_left_on_the_pool(sessions)


async def test_reads_on_one_connection_share_its_cursor_and_keep_their_own_rows(
    new_database: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = db.make_engine(new_database("driver_sql_cursor"), pool_size=1)
    async with engine.begin() as connection:
        await connection.execute(text("CREATE TABLE seats (seat int PRIMARY KEY, holder text)"))
        await connection.execute(text("INSERT INTO seats VALUES (1, 'ada'), (2, 'bo')"))
    made: list[object] = []
    cursor = psycopg.AsyncConnection.cursor

    def counted(self: psycopg.AsyncConnection[Any], *args: Any, **kwargs: Any) -> Any:
        made.append(self)
        return cursor(self, *args, **kwargs)

    monkeypatch.setattr(psycopg.AsyncConnection, "cursor", counted)
    try:
        first = await driver_sql.alone(engine, HOLDER, {"seat": 1})
        with pytest.raises(DBAPIError):  # a failed statement leaves the cursor usable
            await driver_sql.alone(engine, "SELECT holder FROM nowhere", {})
        second = await driver_sql.alone(engine, HOLDER, {"seat": 2})
        async with driver_sql.transaction(engine) as session:
            seats = await driver_sql.fetch_all(session, "SELECT seat FROM seats ORDER BY 1", {})
    finally:
        await engine.dispose()

    assert [row.holder for row in first] == ["ada"]
    assert [row.holder for row in second] == ["bo"]
    assert [row.seat for row in seats] == [1, 2]
    assert len(made) == 1  # the pool's one connection, one cursor for all four statements
