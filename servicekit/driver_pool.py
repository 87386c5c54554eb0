"""Driver connections for the hot paths, pooled beside the engine's own pool.

A statement on the driver (servicekit.driver_sql) needs no ORM session, and asking
SQLAlchemy's pool for the connection underneath cost more than the statement: a
greenlet crossing each way, an autocommit switch each way and a session to carry it.
Measured under `make bench-booking` with the workers off, a card checkout's service
CPU went from 1.70-1.71 ms to 1.36-1.49 ms with connections lent from a plain queue.

This pool lends psycopg connections in autocommit mode, each with a session bound to
nothing that it keeps for its life (the unit of work's repositories take a session;
making one per request was a third of that saving). It is written here rather than
taken from psycopg_pool, which waits out a database outage for its whole time-out
before it answers; here a connection that cannot be made fails at once, as an outage
(servicekit.faults), the way SQLAlchemy's pool fails, and the caller hears UNAVAILABLE.
A connection that comes back broken or inside a transaction is closed, not lent again.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession


@dataclass
class Lent:
    """A pooled connection, with what lives as long as it does."""

    driver: psycopg.AsyncConnection[Any]
    session: AsyncSession = field(default_factory=AsyncSession)  # bound to nothing
    kept: dict[Any, Any] = field(default_factory=dict)  # per-connection caches


class DriverPool:
    def __init__(self, conninfo: str, size: int, wait_s: float, **connect: Any) -> None:
        self._conninfo = conninfo
        self._connect = connect
        self._wait_s = wait_s
        self._free = asyncio.Semaphore(size)
        self._idle: list[Lent] = []
        self._closed = False

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Lent]:
        await self._acquire()
        try:
            lent = self._idle.pop() if self._idle else await self._open()
        except BaseException:
            self._free.release()
            raise
        try:
            yield lent
        finally:
            try:
                await self._give_back(lent)
            finally:
                self._free.release()

    async def _acquire(self) -> None:
        if not self._free.locked():
            await self._free.acquire()  # at once: no time-out (a task) needed
            return
        try:
            await asyncio.wait_for(self._free.acquire(), self._wait_s)
        except TimeoutError:
            raise sa_exc.TimeoutError("no pooled connection came free in time") from None

    async def _open(self) -> Lent:
        try:
            driver = await psycopg.AsyncConnection.connect(
                self._conninfo, autocommit=True, **self._connect
            )
        except psycopg.Error as error:  # told as SQLAlchemy's outage, as the engine tells it
            raise sa_exc.OperationalError("connect", None, error) from error
        return Lent(driver)

    async def dedicated(self) -> psycopg.AsyncConnection[Any]:
        """A connection of its own, outside the pool, with the pool's settings: for a
        session that lasts as long as what it holds (servicekit.leadership's lock)."""
        return (await self._open()).driver

    async def _give_back(self, lent: Lent) -> None:
        lent.session.info.clear()
        healthy = lent.driver.info.transaction_status == TransactionStatus.IDLE
        if healthy and not self._closed:
            self._idle.append(lent)
        else:
            await lent.driver.close()

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for lent in idle:
            await lent.driver.close()


_POOLS: weakref.WeakKeyDictionary[Any, DriverPool] = weakref.WeakKeyDictionary()


def attach(engine: AsyncEngine, size: int, wait_s: float, **connect: Any) -> None:
    """Gives an engine its driver pool, on the same database with the same settings."""
    url = make_url(engine.url).set(drivername="postgresql")
    conninfo = url.render_as_string(hide_password=False)
    _POOLS[engine.sync_engine] = DriverPool(conninfo, size, wait_s, **connect)


def of(engine: AsyncEngine) -> DriverPool:
    return _POOLS[engine.sync_engine]


async def close(engine: AsyncEngine) -> None:
    pool = _POOLS.get(engine.sync_engine)
    if pool is not None:
        await pool.close()
