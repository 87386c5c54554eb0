"""The relay hears of committed outbox rows from PostgreSQL (LISTEN/NOTIFY).

The outbox's trigger (servicekit.schema.announce_commits) notifies its channel at each
commit that wrote rows. The leading relay keeps one connection of its own that listens,
and its lanes wait for a notification instead of asking every 50 ms whether anything is
due: an idle relay asked 24 times a second, and every event waited 25 ms on average for
the next question before it was published.

A notification only wakes a lane; what is due is still decided by the claim. So a lost
notification delays a row, never loses it: the lanes still ask when no notification
came for a while, and while the listening connection is down (a database outage or
restart) they ask at the old rest until it is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import psycopg
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from servicekit import driver_pool
from servicekit.outage import OutageLog
from servicekit.schema import outbox_channel
from servicekit.supervision import pause

log = logging.getLogger(__name__)

# A connection lost without a word (a network cut rather than a closed socket) is noticed
# by asking it something; a question every few seconds costs nothing measurable.
LISTENER_CHECK_S = 5.0
RECONNECT_FIRST_S = 0.1
RECONNECT_MAX_S = 5.0


class OutboxListener:
    """Whether rows were committed to one outbox since a lane last looked."""

    def __init__(self, engine: AsyncEngine, table: str) -> None:
        self._engine = engine
        self._channel = outbox_channel(table)
        self._committed = asyncio.Event()
        self._database = OutageLog(log, f"listener of {table}: the database")
        self.listening = False
        self.backend_pid: int | None = None  # the listening session's, for operators and tests

    async def listen(self, until: asyncio.Event) -> None:
        """Listens until `until`, connecting again with backoff whenever the connection
        is lost; the lanes poll meanwhile."""
        backoff = RECONNECT_FIRST_S
        while not until.is_set():
            try:
                connection = await driver_pool.of(self._engine).dedicated()
            except DBAPIError as error:
                self._database.failed(error)
                await pause(until, backoff)
                backoff = min(backoff * 2, RECONNECT_MAX_S)
                continue
            try:
                await self._hear(connection, until)
            except (psycopg.Error, OSError) as error:
                self._database.failed(error)
            finally:
                self._stop_listening()
                with contextlib.suppress(Exception):
                    await connection.close()
            backoff = RECONNECT_FIRST_S
            await pause(until, backoff)

    async def _hear(self, connection: psycopg.AsyncConnection[Any], until: asyncio.Event) -> None:
        await connection.execute(f'LISTEN "{self._channel}"')
        self.backend_pid = connection.info.backend_pid
        self.listening = True
        self._database.succeeded()
        # Rows committed while nobody listened are claimed now rather than at the next poll.
        self._committed.set()
        while not until.is_set():
            async for _ in connection.notifies(timeout=LISTENER_CHECK_S):
                self._committed.set()
            await connection.execute("SELECT 1")

    def _stop_listening(self) -> None:
        self.listening = False
        self.backend_pid = None
        self._committed.set()  # the lanes go back to polling at once, not after the fallback

    @property
    def heard(self) -> bool:
        """Whether rows were committed since the last claim began (or nobody listens)."""
        return self._committed.is_set()

    def claiming(self) -> None:
        """A claim is about to see every commit heard so far: only later ones count."""
        self._committed.clear()

    async def committed_or(self, stopping: asyncio.Event, within_s: float) -> None:
        """Returns when rows were committed since the last claim began (`heard`), or
        `stopping` is set, or after `within_s`."""
        waits = [
            asyncio.ensure_future(self._committed.wait()),
            asyncio.ensure_future(stopping.wait()),
        ]
        try:
            await asyncio.wait(waits, timeout=within_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
