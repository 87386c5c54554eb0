"""Pruning removes what is past its window and nothing younger; recurring jobs keep going."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from servicekit.recurring import RECURRING, Recurring, RecurringJob
from servicekit.retention import RetentionWindows, prune
from servicekit.retry import RetryPolicy
from servicekit.timers import TimerRunner, Timers
from tests.foundation.conftest import Pair
from tests.foundation.harness import Side

DAY = timedelta(days=1)


def _ago(delta: timedelta) -> datetime:
    return datetime.now(UTC) - delta


async def _insert(side: Side, table: Any, rows: list[dict[str, Any]]) -> None:
    async with side.sessions() as session, session.begin():
        await session.execute(table.insert(), rows)


def _outbox_row(state: str, dispatched: timedelta | None, created: timedelta) -> dict[str, Any]:
    return {
        "effect_id": uuid.uuid4(),
        "topic": "t",
        "key": "k",
        "event_type": "e",
        "payload": b"",
        "headers": {},
        "state": state,
        "created_at": _ago(created),
        "dispatched_at": _ago(dispatched) if dispatched else None,
    }


def _inbox_row(state: str, processed: timedelta) -> dict[str, Any]:
    return {
        "consumer": "c",
        "event_id": str(uuid.uuid4()),
        "event_type": "e",
        "state": state,
        "topic": "t",
        "partition": 0,
        "offset": 0,
        "processed_at": _ago(processed),
    }


def _timer_row(state: str, fired: timedelta | None, created: timedelta) -> dict[str, Any]:
    return {
        "timer_id": uuid.uuid4(),
        "kind": "k",
        "aggregate_id": "a",
        "due_at": _ago(created),
        "expected": {},
        "headers": {},
        "state": state,
        "created_at": _ago(created),
        "fired_at": _ago(fired) if fired else None,
    }


async def _states(side: Side, table: Any) -> list[str]:
    async with side.sessions() as session:
        return sorted(row.state for row in await session.execute(select(table.c.state)))


async def test_pruning_removes_what_is_past_its_window_and_nothing_younger(pair: Pair) -> None:
    side = pair.consumer
    tables = side.tables
    await _insert(
        side,
        tables.outbox,
        [
            _outbox_row("dispatched", 8 * DAY, 8 * DAY),  # past the window
            _outbox_row("dispatched", 6 * DAY, 8 * DAY),  # sent two days late: kept
            _outbox_row("pending", None, 30 * DAY),
            _outbox_row("failed", None, 30 * DAY),
        ],
    )
    await _insert(
        side,
        tables.inbox,
        [
            _inbox_row("processed", 15 * DAY),  # past the window
            _inbox_row("processed", 13 * DAY),
            _inbox_row("failed", 30 * DAY),  # parked: waits for a person
        ],
    )
    await _insert(
        side,
        tables.timers,
        [
            _timer_row("fired", 8 * DAY, 9 * DAY),  # past the window
            _timer_row("cancelled", None, 8 * DAY),  # past the window
            _timer_row("fired", 6 * DAY, 9 * DAY),
            _timer_row("pending", None, 30 * DAY),
            _timer_row("failed", None, 30 * DAY),
        ],
    )
    async with side.sessions() as session, session.begin():
        pruned = await prune(session, tables, RetentionWindows())
    assert (pruned.outbox, pruned.inbox, pruned.timers) == (1, 1, 2)
    assert await _states(side, tables.outbox) == ["dispatched", "failed", "pending"]
    assert await _states(side, tables.inbox) == ["failed", "processed"]
    assert await _states(side, tables.timers) == ["failed", "fired", "pending"]


async def test_pruning_deletes_at_most_a_batch_per_run(pair: Pair) -> None:
    side = pair.consumer
    old = [_outbox_row("dispatched", 8 * DAY, 8 * DAY) for _ in range(5)]
    await _insert(side, side.tables.outbox, old)
    windows = RetentionWindows(batch=2)
    counts = []
    for _ in range(4):
        async with side.sessions() as session, session.begin():
            counts.append((await prune(session, side.tables, windows)).outbox)
    assert counts == [2, 2, 1, 0]


async def test_a_recurring_job_runs_books_its_next_run_and_comes_back_after_failing(
    pair: Pair,
) -> None:
    side = pair.consumer
    timers = Timers(side.tables.timers)
    runs: list[int] = []
    failing = [True]

    async def work(session: Any) -> None:
        runs.append(1)
        if failing[0]:
            raise RuntimeError("the job's own work fails")

    recurring = Recurring(side.sessions, timers, [RecurringJob("tick", 0.0, work)])
    await recurring.ensure_scheduled()
    await recurring.ensure_scheduled()  # a second process's check books nothing more
    t = side.tables.timers.c
    count = select(func.count()).where(t.kind == "tick", t.state == "pending")
    assert await side.scalar(count) == 1
    runner = TimerRunner(
        side.sessions, side.tables.timers, recurring.handlers(), policy=RetryPolicy(max_attempts=1)
    )
    await runner.fire_due()  # fails and, its attempts used up, ends failed
    assert await side.scalar(count) == 0
    await recurring.ensure_scheduled()  # the keeper books it again
    failing[0] = False
    assert await runner.fire_due() == 1
    assert len(runs) == 2
    assert await side.scalar(count) == 1  # the run booked the next one
    aggregates = select(t.aggregate_id).where(t.kind == "tick").distinct()
    assert await side.scalar(aggregates) == RECURRING
