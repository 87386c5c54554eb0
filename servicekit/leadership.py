"""One holder at a time among a service's replicas, for work that is cheaper done by one.

Each replica's relay could publish every row by itself, and correctly so beside the others
(`FOR UPDATE SKIP LOCKED`); but under load the replicas' relays split the rows into twice
as many batches, and a batch costs its claim, its commit and a produce request that Kafka
spends about 3 ms of CPU on whatever its size (measured; docs/performance.md). So one replica
leads the work at a time and the others wait to take over.

The lease is a PostgreSQL session-level advisory lock held on a connection of its own:
when the holder dies, its connection closes and the database releases the lock at once;
a waiting replica asks again every `retry_s` and takes over. The holder checks its
connection every `check_s`; when the connection is lost the work is told to stop, and the
replica starts asking again. Nothing depends on the lease for correctness: two holders
for a moment (a lost connection noticed late) do what two relays always could.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from servicekit import driver_pool
from servicekit.metrics.counters import LEASE_HELD
from servicekit.outage import OutageLog
from servicekit.supervision import pause

log = logging.getLogger(__name__)
Work = Callable[[asyncio.Event], Awaitable[None]]

# The advisory lock's first key: this module's locks, apart from any other in the database.
_LEASES = 0x4C46_4C45  # "LFLE"


class Lease:
    def __init__(
        self, engine: AsyncEngine, name: str, retry_s: float = 1.0, check_s: float = 2.0
    ) -> None:
        self._engine = engine
        self._name = name
        # A stable key for the name in the lock's second int4 (crc32 is stable across runs).
        self._key = zlib.crc32(name.encode()) - (1 << 31)
        self._retry_s = retry_s
        self._check_s = check_s
        self._database = OutageLog(log, f"lease of {name}: the database")
        self._held = LEASE_HELD.labels(name)
        self._held.set(0)
        self.held = False
        self.asked = 0  # times this replica asked for the lease (for tests and operators)

    async def lead(self, stopping: asyncio.Event, work: Work) -> None:
        """Runs `work(until)` whenever this replica holds the lease, until `stopping`;
        `until` is set when the lease is lost or the replica stops, and `work` returns
        soon after."""
        while not stopping.is_set():
            try:
                connection = await driver_pool.of(self._engine).dedicated()
            except DBAPIError as error:
                self._database.failed(error)
                await pause(stopping, self._retry_s)
                continue
            try:
                if await self._acquire(connection, stopping):
                    await self._hold(connection, stopping, work)
            except (psycopg.Error, OSError) as error:
                self._database.failed(error)
                await pause(stopping, self._retry_s)
            finally:
                with contextlib.suppress(Exception):
                    await connection.close()

    async def _acquire(
        self, connection: psycopg.AsyncConnection[Any], stopping: asyncio.Event
    ) -> bool:
        while not stopping.is_set():
            cursor = await connection.execute(
                "SELECT pg_try_advisory_lock(%s, %s)", (_LEASES, self._key)
            )
            row = await cursor.fetchone()
            self.asked += 1
            self._database.succeeded()
            if row is not None and row[0]:
                return True
            await pause(stopping, self._retry_s)
        return False

    async def _hold(
        self, connection: psycopg.AsyncConnection[Any], stopping: asyncio.Event, work: Work
    ) -> None:
        until = asyncio.Event()
        watch = asyncio.create_task(self._watch(connection, stopping, until))
        self.held = True
        self._held.set(1)
        log.info("lease of %s: this replica leads", self._name)
        try:
            await work(until)
        finally:
            self.held = False
            self._held.set(0)
            until.set()
            watch.cancel()
            await asyncio.gather(watch, return_exceptions=True)
            log.info("lease of %s: this replica no longer leads", self._name)
        lost = None if watch.cancelled() else watch.exception()
        if lost is not None:
            raise lost  # the connection's error: the lease was lost with it

    async def _watch(
        self,
        connection: psycopg.AsyncConnection[Any],
        stopping: asyncio.Event,
        until: asyncio.Event,
    ) -> None:
        """Sets `until` when the replica stops or the lease's connection is lost."""
        try:
            while not stopping.is_set():
                await pause(stopping, self._check_s)
                if not stopping.is_set():
                    await connection.execute("SELECT 1")
        finally:
            until.set()
