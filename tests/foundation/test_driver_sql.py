"""Driver SQL shares the session's transaction and reports errors as SQLAlchemy does."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import db, driver_sql

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
