"""Durable timers: jobs with a due time in the service's own database.

A timer is written in the same transaction as the change that needs it, survives
restarts, and carries the state it expects to find when it fires; its handler checks that
state and does nothing if it changed (an old revoke never removes a replacement). Due
timers are claimed with SKIP LOCKED, so several runners share them; a timer's effect and
its "fired" mark commit together.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from opentelemetry.trace import SpanKind
from sqlalchemy import Table, func, select, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import driver_sql, tracing
from servicekit.retry import RetryPolicy, seconds_from_now
from servicekit.schema import CANCELLED, FAILED, FIRED, PENDING

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DueTimer:
    timer_id: uuid.UUID
    kind: str
    aggregate_id: str
    due_at: datetime
    expected: dict[str, Any]


TimerHandler = Callable[[AsyncSession, DueTimer], Awaitable[None]]


class Timers:
    """Schedules and cancels timers inside the caller's transaction."""

    _COLUMNS = ("timer_id", "kind", "aggregate_id", "due_at", "expected", "headers")

    def __init__(self, table: Table) -> None:
        self.table = table
        self._insert = driver_sql.insert_sql(table, self._COLUMNS)

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

    async def cancel(self, session: AsyncSession, kind: str, aggregate_id: str) -> int:
        t = self.table.c
        result = await session.execute(
            update(self.table)
            .where(t.kind == kind, t.aggregate_id == aggregate_id, t.state == PENDING)
            .values(state=CANCELLED)
        )
        return int(getattr(result, "rowcount", 0) or 0)


class TimerRunner:
    """Fires due timers through their handlers."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        table: Table,
        handlers: Mapping[str, TimerHandler],
        policy: RetryPolicy | None = None,
        batch_size: int = 50,
        idle_wait_s: float = 0.2,
    ) -> None:
        self._sessions = sessions
        self._table = table
        self._handlers = handlers
        self._policy = policy or RetryPolicy()
        self._batch_size = batch_size
        self._idle_wait_s = idle_wait_s
        self._tracer = tracing.tracer("servicekit.timers")

    async def run(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            try:
                fired = await self.fire_due()
            except (DBAPIError, OSError) as error:
                log.warning("timer runner waiting for the database: %s", error)
                fired = 0
            if fired == 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), self._idle_wait_s)

    async def fire_due(self) -> int:
        """Fires one batch of due timers; returns how many were handled."""
        async with self._sessions() as session, session.begin():
            t = self._table.c
            rows = (
                await session.execute(
                    select(self._table)
                    .where(t.state == PENDING, t.due_at <= func.now())
                    .order_by(t.due_at)
                    .limit(self._batch_size)
                    .with_for_update(skip_locked=True)
                )
            ).all()
            for row in rows:
                await self._fire(session, row)
            return len(rows)

    async def _fire(self, session: AsyncSession, row: Any) -> None:
        timer = DueTimer(row.timer_id, row.kind, row.aggregate_id, row.due_at, dict(row.expected))
        handler = self._handlers.get(timer.kind)
        with self._tracer.start_as_current_span(
            f"timer {timer.kind}",
            context=tracing.context_from(row.headers),
            kind=SpanKind.INTERNAL,
            attributes={"timer.id": str(timer.timer_id)},
        ):
            try:
                async with session.begin_nested():
                    if handler is None:
                        raise LookupError(f"no handler for timer kind {timer.kind!r}")
                    await handler(session, timer)
            except Exception as error:
                await self._postpone(session, row, error)
                return
        await session.execute(
            update(self._table)
            .where(self._table.c.timer_id == row.timer_id)
            .values(state=FIRED, fired_at=func.now(), attempts=row.attempts + 1)
        )

    async def _postpone(self, session: AsyncSession, row: Any, error: BaseException) -> None:
        attempts = row.attempts + 1
        log.warning("timer %s (%s) failed, attempt %d: %r", row.timer_id, row.kind, attempts, error)
        delay = self._policy.delay_after(attempts)
        await session.execute(
            update(self._table)
            .where(self._table.c.timer_id == row.timer_id)
            .values(
                attempts=attempts,
                last_error=repr(error)[:2000],
                state=FAILED if self._policy.exhausted(attempts) else PENDING,
                due_at=seconds_from_now(delay),
            )
        )
