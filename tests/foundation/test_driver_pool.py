"""The driver pool lends only healthy connections and fails an outage at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import psycopg
import pytest
from psycopg.pq import TransactionStatus
from sqlalchemy import exc as sa_exc
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from servicekit import db, driver_pool
from servicekit.faults import Fault, classify

CLOSED_PORT_URL = "postgresql+psycopg://liftfit_app:liftfit_app@127.0.0.1:1/nothing"


@pytest.fixture
async def engine(new_database: Callable[[str], str]) -> AsyncIterator[AsyncEngine]:
    engine = db.make_engine(new_database("driver_pool"), pool_size=1)
    yield engine
    await driver_pool.close(engine)
    await engine.dispose()


async def _backend_pid(engine: AsyncEngine) -> int:
    async with driver_pool.of(engine).connection() as lent:
        assert lent.driver.autocommit
        assert lent.driver.info.transaction_status == TransactionStatus.IDLE
        return lent.driver.info.backend_pid


async def test_a_healthy_connection_is_lent_again_with_a_clean_session(
    engine: AsyncEngine,
) -> None:
    async with driver_pool.of(engine).connection() as lent:
        lent.session.info["left"] = "by a request"
        first = lent.driver.info.backend_pid
    async with driver_pool.of(engine).connection() as lent:
        assert lent.driver.info.backend_pid == first
        assert "left" not in lent.session.info


async def test_a_connection_given_back_inside_a_transaction_is_closed(
    engine: AsyncEngine,
) -> None:
    async with driver_pool.of(engine).connection() as lent:
        await lent.driver.execute("BEGIN")
        left_open = lent.driver
        first = lent.driver.info.backend_pid
    assert left_open.closed
    assert await _backend_pid(engine) != first


async def test_a_connection_that_died_fails_once_and_is_replaced(engine: AsyncEngine) -> None:
    dead = await _backend_pid(engine)
    async with engine.connect() as other:
        killer = (await other.get_raw_connection()).driver_connection
        assert killer is not None
        await killer.execute(f"SELECT pg_terminate_backend({dead})")
    with pytest.raises(psycopg.OperationalError):
        async with driver_pool.of(engine).connection() as lent:
            await lent.driver.execute("SELECT 1")
    assert lent.driver.closed
    assert await _backend_pid(engine) not in (dead, 0)


async def test_a_full_pool_makes_a_borrower_wait_then_fails_as_an_outage(
    new_database: Callable[[str], str],
) -> None:
    engine = db.make_engine(new_database("driver_pool_full"), pool_size=1)
    pool = driver_pool.of(engine)
    pool._wait_s = 0.3  # the default (10 s) would only slow the test
    try:
        async with pool.connection():
            started = time.monotonic()
            with pytest.raises(sa_exc.TimeoutError) as waited:
                async with pool.connection():
                    pass
            assert time.monotonic() - started >= 0.25
        assert classify(waited.value) is Fault.OUTAGE
        assert await _backend_pid(engine) > 0  # the slot came free again
    finally:
        await driver_pool.close(engine)
        await engine.dispose()


async def test_an_unreachable_database_fails_at_once_as_an_outage() -> None:
    engine = db.make_engine(CLOSED_PORT_URL)
    started = time.monotonic()
    with pytest.raises(sa_exc.OperationalError) as refused:
        async with driver_pool.of(engine).connection():
            pass
    assert time.monotonic() - started < 5  # not the pool's wait for a free connection
    assert classify(refused.value) is Fault.OUTAGE
    await engine.dispose()


async def test_a_borrower_cancelled_mid_statement_frees_its_slot_and_the_statement_stops(
    engine: AsyncEngine,
) -> None:
    # A caller hanging up cancels its handler's task: psycopg cancels the statement in the
    # server too (a checkout rolls back) and the connection is idle again, fit to lend.
    pool = driver_pool.of(engine)  # one connection
    pool._wait_s = 1.0  # a slot that leaked would fail the next borrower in a second
    started = asyncio.Event()
    pids: list[int] = []

    async def caller_who_hangs_up() -> None:
        async with pool.connection() as lent:
            pids.append(lent.driver.info.backend_pid)
            started.set()
            await lent.driver.execute("SELECT pg_sleep(30)")

    call = asyncio.create_task(caller_who_hangs_up())
    await started.wait()
    await _running_on(engine, pids[0])
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert await _backend_pid(engine) == pids[0]  # idle, in autocommit, lent again
    assert await _state_of(engine, pids[0]) == "idle"  # the sleep was cancelled, not waited


async def _state_of(engine: AsyncEngine, pid: int) -> str | None:
    query = text("SELECT state FROM pg_stat_activity WHERE pid = :pid")
    async with engine.connect() as watcher:
        state: str | None = (await watcher.execute(query, {"pid": pid})).scalar_one_or_none()
        return state


async def _running_on(engine: AsyncEngine, pid: int) -> None:
    """Until the backend is running the statement, as the server reports it."""
    while await _state_of(engine, pid) != "active":
        await asyncio.sleep(0.01)
