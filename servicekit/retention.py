"""Pruning what the eventing tables no longer need, by a recurring durable job.

The windows, and why each is safe:
- a dispatched outbox row is kept 7 days: an operator can replay an effect for a week;
- a processed inbox row is kept 14 days: the de-duplication window must outlast every way
  the same event can arrive again, that is the topics' retention (3 days here), a replay of
  a dispatched outbox row (7 days) and the relay's retries (minutes);
- a fired or cancelled timer is kept 7 days, for the timelines operators read.
Failed outbox rows, parked inbox rows, failed timers and incidents are never pruned: they
wait for a person. Each run deletes at most a batch per table, so it never holds a table
long; a backlog shrinks over the following runs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import ColumnElement, Table, delete, func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.recurring import RecurringJob
from servicekit.schema import CANCELLED, DISPATCHED, FIRED, PROCESSED, EventingTables

log = logging.getLogger(__name__)
PRUNE = "servicekit.prune"


@dataclass(frozen=True)
class RetentionWindows:
    dispatched_outbox: timedelta = timedelta(days=7)
    processed_inbox: timedelta = timedelta(days=14)
    finished_timers: timedelta = timedelta(days=7)
    batch: int = 5000


@dataclass(frozen=True)
class Pruned:
    outbox: int
    inbox: int
    timers: int


async def prune(session: AsyncSession, tables: EventingTables, windows: RetentionWindows) -> Pruned:
    outbox, inbox, timers = tables.outbox, tables.inbox, tables.timers
    sent = _older(outbox.c.dispatched_at, windows.dispatched_outbox)
    seen = _older(inbox.c.processed_at, windows.processed_inbox)
    ended = _older(func.coalesce(timers.c.fired_at, timers.c.created_at), windows.finished_timers)
    pruned = Pruned(
        outbox=await _delete_batch(
            session, outbox, (outbox.c.state == DISPATCHED) & sent, windows.batch
        ),
        inbox=await _delete_batch(
            session, inbox, (inbox.c.state == PROCESSED) & seen, windows.batch
        ),
        timers=await _delete_batch(
            session, timers, timers.c.state.in_((FIRED, CANCELLED)) & ended, windows.batch
        ),
    )
    if pruned.outbox or pruned.inbox or pruned.timers:
        log.info("pruned %s", pruned)
    return pruned


def pruning_job(
    tables: EventingTables, windows: RetentionWindows | None = None, every_s: float = 3600.0
) -> RecurringJob:
    chosen = windows or RetentionWindows()

    async def work(session: AsyncSession) -> None:
        await prune(session, tables, chosen)

    return RecurringJob(PRUNE, every_s, work)


def _older(column: ColumnElement[object], window: timedelta) -> ColumnElement[bool]:
    return column < func.now() - func.make_interval(0, 0, 0, 0, 0, 0, window.total_seconds())


async def _delete_batch(
    session: AsyncSession, table: Table, condition: ColumnElement[bool], batch: int
) -> int:
    key = tuple_(*table.primary_key.columns)
    doomed = select(*table.primary_key.columns).where(condition).limit(batch)
    result = await session.execute(delete(table).where(key.in_(doomed)))
    return int(getattr(result, "rowcount", 0) or 0)
