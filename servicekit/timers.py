"""Durable timers: jobs with a due time in the service's own database.

A timer is written in the same transaction as the change that needs it, survives
restarts, and carries the state it expects to find when it fires; its handler checks that
state and does nothing if it changed (an old revoke never removes a replacement).

A runner claims due timers with SKIP LOCKED and commits the claim (a lease) before any
handler runs, so no row lock is held while a handler works, and runs the claimed timers
side by side: one slow job never delays another. A runner that dies mid-job loses only
its lease, which expires, and the timer is claimed again.

Two kinds of handler:
- a *transactional* handler (`TimerHandler`) runs inside a transaction that also marks
  the timer fired, so its effect and the mark commit together;
- an *outbound* job (`OutboundJob`) calls a provider: it opens its own short
  transactions (read, then apply the answer) and holds none across the call; the timer
  is marked fired after it returns, so a crash in between repeats a call that the
  provider's idempotency key makes harmless.

Attempts are counted at the claim and bounded; a timer that uses them up ends `failed`
and opens an incident for an operator. A database outage spends no attempt.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from opentelemetry.trace import SpanKind
from sqlalchemy import Table, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import driver_sql, logs, tracing
from servicekit.faults import Fault, classify
from servicekit.incidents import Incidents
from servicekit.outage import OutageLog
from servicekit.retry import RetryPolicy, seconds_from_now
from servicekit.schema import CANCELLED, FAILED, FIRED, PENDING
from servicekit.supervision import pause

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DueTimer:
    timer_id: uuid.UUID
    kind: str
    aggregate_id: str
    due_at: datetime
    expected: dict[str, Any]
    attempts: int = 1
    headers: dict[str, str] = field(default_factory=dict)
    lease: uuid.UUID | None = None


def tries_of(timer: DueTimer) -> int:
    """Which try of an outbound job this is: its `expected` counts them (see
    `UnitOfWork.retry_later`), since a job decides itself when an answer is worth a retry."""
    return int(timer.expected.get("try", 1))


TimerHandler = Callable[[AsyncSession, DueTimer], Awaitable[None]]
OutboundJob = Callable[[DueTimer], Awaitable[None]]


class Timers:
    """Schedules and cancels timers inside the caller's transaction."""

    _COLUMNS = ("timer_id", "kind", "aggregate_id", "due_at", "expected", "headers")

    def __init__(self, table: Table) -> None:
        self.table = table
        self._insert = driver_sql.insert_sql(table, self._COLUMNS)
        pending = (
            f"WHERE kind = %(kind)s AND aggregate_id = %(aggregate_id)s AND state = '{PENDING}'"
        )
        self._pending = f'SELECT 1 FROM "{table.name}" {pending} LIMIT 1'
        self._cancel = (
            f"UPDATE \"{table.name}\" SET state = '{CANCELLED}' {pending} RETURNING timer_id"
        )

    async def schedule(
        self,
        session: AsyncSession,
        kind: str,
        aggregate_id: str,
        due_at: datetime,
        expected: dict[str, Any],
    ) -> uuid.UUID:
        timer_id = uuid.uuid4()
        await driver_sql.execute(
            session,
            self._insert,
            {
                "timer_id": timer_id,
                "kind": kind,
                "aggregate_id": aggregate_id,
                "due_at": due_at,
                "expected": driver_sql.Jsonb(expected),
                "headers": driver_sql.Jsonb(tracing.current_carrier()),
            },
        )
        return timer_id

    async def has_pending(self, session: AsyncSession, kind: str, aggregate_id: str) -> bool:
        params = {"kind": kind, "aggregate_id": aggregate_id}
        return await driver_sql.fetch_one(session, self._pending, params) is not None

    async def cancel(self, session: AsyncSession, kind: str, aggregate_id: str) -> int:
        params = {"kind": kind, "aggregate_id": aggregate_id}
        return len(await driver_sql.fetch_all(session, self._cancel, params))


class TimerRunner:
    """Fires due timers through their handlers, several at a time."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        table: Table,
        handlers: Mapping[str, TimerHandler],
        policy: RetryPolicy | None = None,
        batch_size: int = 50,
        idle_wait_s: float = 0.2,
        outbound: Mapping[str, OutboundJob] | None = None,
        incidents: Incidents | None = None,
        concurrency: int = 16,
        lease_s: float = 30.0,
        subjects: Mapping[str, str] | None = None,
    ) -> None:
        self._sessions = sessions
        self._table = table
        self._handlers = handlers
        self._outbound = outbound or {}
        self._incidents = incidents
        self._policy = policy or RetryPolicy()
        self._batch_size = batch_size
        self._idle_wait_s = idle_wait_s
        self._slots = asyncio.Semaphore(concurrency)
        self._concurrency = concurrency
        self._lease_s = lease_s
        self._subjects = subjects or {}
        self._tracer = tracing.tracer("servicekit.timers")
        self._database = OutageLog(log, f"timers of {table.name}: the database")
        self._claim_sql = _claim_sql(table.name)
        self._fired_sql = _fired_sql(table.name)
        self._running: set[asyncio.Task[None]] = set()

    async def run(self, stopping: asyncio.Event) -> None:
        try:
            while not stopping.is_set():
                claimed = await self._claim_while_free()
                if not claimed:
                    await pause(stopping, self._idle_wait_s)
        finally:
            for task in list(self._running):
                task.cancel()
            await asyncio.gather(*self._running, return_exceptions=True)

    async def fire_due(self) -> int:
        """Claims one batch of due timers and runs them to the end; returns how many."""
        timers = await self._claim(self._batch_size)
        await asyncio.gather(*(self._fire(timer) for timer in timers))
        return len(timers)

    async def _claim_while_free(self) -> int:
        free = self._concurrency - len(self._running)
        if free <= 0:
            await asyncio.wait(self._running, return_when=asyncio.FIRST_COMPLETED)
            return 1
        try:
            timers = await self._claim(min(free, self._batch_size))
            self._database.succeeded()
        except Exception as error:
            if classify(error) is not Fault.OUTAGE:
                raise
            self._database.failed(error)
            return 0
        for timer in timers:
            task = asyncio.create_task(self._fire(timer))
            self._running.add(task)
            task.add_done_callback(self._running.discard)
        return len(timers)

    async def _claim(self, limit: int) -> list[DueTimer]:
        lease = uuid.uuid4()
        params = {"limit": limit, "lease": lease, "lease_s": self._lease_s}
        # One statement, committed by itself: an idle runner claims five times a second,
        # and a session's transaction around it took four round trips instead of one.
        rows = await driver_sql.alone(self._sessions.kw["bind"], self._claim_sql, params)
        return [_due_timer(row, lease) for row in rows]

    async def _fire(self, timer: DueTimer) -> None:
        async with self._slots:
            with (
                self._tracer.start_as_current_span(
                    f"timer {timer.kind}",
                    context=tracing.context_from(timer.headers),
                    kind=SpanKind.INTERNAL,
                    attributes={"timer.id": str(timer.timer_id), "timer.kind": timer.kind},
                ),
                logs.about(**self._ids_of(timer)),
            ):
                try:
                    await self._handle(timer)
                except Exception as error:
                    await self._postpone(timer, error)

    def _ids_of(self, timer: DueTimer) -> dict[str, str]:
        """The booking, payment and grant ids of a job, for its log lines: those in its
        expectations, and its aggregate's when the service names what that is."""
        ids = logs.ids_in(timer.expected)
        subject = self._subjects.get(timer.kind)
        if subject is not None:
            ids[subject] = timer.aggregate_id
        return ids

    async def _handle(self, timer: DueTimer) -> None:
        outbound = self._outbound.get(timer.kind)
        if outbound is not None:
            await outbound(timer)
            # A statement that is a transaction by itself: no session around it.
            await driver_sql.alone(self._sessions.kw["bind"], self._fired_sql, _lease_of(timer))
            return
        handler = self._handlers.get(timer.kind)
        if handler is None:
            raise LookupError(f"no handler for timer kind {timer.kind!r}")
        async with self._sessions() as session, session.begin():
            await handler(session, timer)
            await self._mark_fired(session, timer)

    async def _mark_fired(self, session: AsyncSession, timer: DueTimer) -> None:
        await driver_sql.fetch_all(session, self._fired_sql, _lease_of(timer))

    async def _postpone(self, timer: DueTimer, error: BaseException) -> None:
        """Retries later; after the bound the timer fails and an incident is opened."""
        fault = classify(error)
        outage = fault is Fault.OUTAGE
        exhausted = not outage and self._policy.exhausted(timer.attempts)
        if not outage:
            log.warning(
                "timer %s (%s) failed, attempt %d: %r",
                timer.timer_id,
                timer.kind,
                timer.attempts,
                error,
            )
        while True:  # the outcome must be written, or the lease would hide the timer
            try:
                async with self._sessions() as session, session.begin():
                    await self._write_postponed(session, timer, error, outage, exhausted)
                self._database.succeeded()
                return
            except Exception as write_error:
                if classify(write_error) is not Fault.OUTAGE:
                    log.error(
                        "timer %s: recording its failure failed: %r", timer.timer_id, write_error
                    )
                    return  # the lease expires and the timer is claimed again
                self._database.failed(write_error)
                await asyncio.sleep(1.0)

    async def _write_postponed(
        self,
        session: AsyncSession,
        timer: DueTimer,
        error: BaseException,
        outage: bool,
        exhausted: bool,
    ) -> None:
        t = self._table.c
        delay = 1.0 if outage else self._policy.delay_after(timer.attempts)
        await session.execute(
            update(self._table)
            .where(t.timer_id == timer.timer_id, t.lease_token == timer.lease)
            .values(
                # An outage is not the job's fault: the attempt it was given back.
                attempts=t.attempts - 1 if outage else t.attempts,
                last_error=repr(error)[:2000],
                state=FAILED if exhausted else PENDING,
                due_at=seconds_from_now(delay),
                leased_until=None,
            )
        )
        if exhausted and self._incidents is not None:
            detail = f"{timer.kind} for {timer.aggregate_id} failed {timer.attempts} times: "
            await self._incidents.open(
                session, "timer_failed", f"{timer.kind}:{timer.aggregate_id}", detail + repr(error)
            )


def _claim_sql(table: str) -> str:
    # One statement: pick due, unleased timers (skipping those another runner is claiming),
    # lease them and count the attempt; the claim commits before any handler runs.
    return (
        f'UPDATE "{table}" SET lease_token = %(lease)s, attempts = attempts + 1,'
        " leased_until = now() + make_interval(secs => %(lease_s)s)"
        f' WHERE timer_id IN (SELECT timer_id FROM "{table}"'
        f" WHERE state = '{PENDING}' AND due_at <= now()"
        " AND (leased_until IS NULL OR leased_until < now())"
        " ORDER BY due_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED)"
        " RETURNING timer_id, kind, aggregate_id, due_at, expected, headers, attempts"
    )


def _fired_sql(table: str) -> str:
    # Only the lease's holder may settle it: a runner whose lease expired meanwhile
    # changes nothing. RETURNING, so that the statement has rows to read either way.
    return (
        f"UPDATE \"{table}\" SET state = '{FIRED}', fired_at = now(), leased_until = NULL"
        " WHERE timer_id = %(timer_id)s AND lease_token = %(lease)s RETURNING timer_id"
    )


def _lease_of(timer: DueTimer) -> dict[str, Any]:
    return {"timer_id": timer.timer_id, "lease": timer.lease}


def _due_timer(row: Any, lease: uuid.UUID) -> DueTimer:
    return DueTimer(
        timer_id=row.timer_id,
        kind=row.kind,
        aggregate_id=row.aggregate_id,
        due_at=row.due_at,
        expected=dict(row.expected),
        attempts=row.attempts,
        headers=dict(row.headers or {}),
        lease=lease,
    )
