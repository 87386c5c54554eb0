"""Jobs that run every interval (a reconciliation sweep, pruning), as durable timers.

Each job is one pending timer of its kind; each run does its work and schedules the next
run in the same transaction, so a crash never loses the schedule and two processes never
run it twice at once. A run whose own work keeps failing ends `failed` after its bounded
attempts (with an incident); the keeper, a worker of every service, checks once per
interval that a run is pending and schedules one if not, so the job resumes as soon as
the cause is gone, without a restart.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.faults import Fault, classify
from servicekit.outage import OutageLog
from servicekit.schema import PENDING
from servicekit.supervision import pause
from servicekit.timers import DueTimer, TimerHandler, Timers

log = logging.getLogger(__name__)
RECURRING = "recurring"  # the aggregate id of every recurring job's timer


@dataclass(frozen=True)
class RecurringJob:
    kind: str
    every_s: float
    work: Callable[[AsyncSession], Awaitable[None]]


class Recurring:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        timers: Timers,
        jobs: Sequence[RecurringJob],
    ) -> None:
        self._sessions = sessions
        self._timers = timers
        self._jobs = list(jobs)
        self._database = OutageLog(log, "recurring jobs: the database")

    def handlers(self) -> dict[str, TimerHandler]:
        """For the service's TimerRunner: each run does its work, then books the next."""
        return {job.kind: self._runner(job) for job in self._jobs}

    def _runner(self, job: RecurringJob) -> TimerHandler:
        async def run(session: AsyncSession, timer: DueTimer) -> None:
            await job.work(session)
            await self._schedule(session, job)

        return run

    async def ensure_scheduled(self) -> None:
        for job in self._jobs:
            async with self._sessions() as session, session.begin():
                # One checker at a time per job, so two processes never book it twice.
                lock = text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))")
                await session.execute(lock, {"key": f"recurring:{job.kind}"})
                if not await self._pending(session, job):
                    await self._schedule(session, job)

    async def keep(self, stopping: asyncio.Event) -> None:
        """A worker: checks at start and then once per shortest interval."""
        every_s = max(1.0, min((job.every_s for job in self._jobs), default=60.0))
        while not stopping.is_set():
            try:
                await self.ensure_scheduled()
                self._database.succeeded()
            except Exception as error:
                if classify(error) is not Fault.OUTAGE:
                    raise
                self._database.failed(error)
            await pause(stopping, every_s)

    async def _pending(self, session: AsyncSession, job: RecurringJob) -> bool:
        t = self._timers.table.c
        query = select(t.timer_id).where(
            t.kind == job.kind, t.aggregate_id == RECURRING, t.state == PENDING
        )
        return (await session.execute(query.limit(1))).first() is not None

    async def _schedule(self, session: AsyncSession, job: RecurringJob) -> None:
        due = datetime.now(UTC) + timedelta(seconds=job.every_s)
        await self._timers.schedule(session, job.kind, RECURRING, due, {})
