"""A booking's effects, incidents and trace, read from the eventing tables by its subjects.

Each service names the booking in its effects by the ids it works with (outbox rows are
keyed by their aggregate, timers by the thing they act on), so the view asks by every
subject the service's lookup gave. A timer that used up its attempts opens an incident on
`<timer kind>:<aggregate id>`, which is matched as well.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Row, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.incidents import Incident, incident_of
from servicekit.schema import FAILED, OPEN, PENDING, EventingTables

OUTBOX, TIMER = "outbox", "timer"
MOST = 200  # effects of each source and state shown for one booking
# traceparent: version, trace id, parent span id, flags (W3C Trace Context).
_TRACEPARENT = re.compile(r"[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}")
_NO_TRACE = "0" * 32


@dataclass(frozen=True)
class Effect:
    source: str  # OUTBOX or TIMER
    effect_id: uuid.UUID
    name: str  # the event type, or the timer's kind
    subject: str
    state: str
    attempts: int
    created_at: datetime
    dispatch_generation: int = 0
    last_error: str | None = None
    due_at: datetime | None = None


async def effects_in(
    session: AsyncSession, tables: EventingTables, subjects: Sequence[str], state: str
) -> list[Effect]:
    """The subjects' outbox rows and timers in `state` (pending or failed), oldest first."""
    outbox, timers = tables.outbox.c, tables.timers.c
    rows = await session.execute(
        select(tables.outbox)
        .where(outbox.key.in_(subjects), outbox.state == state)
        .order_by(outbox.seq)
        .limit(MOST)
    )
    found = [_outbox_effect(row) for row in rows]
    rows = await session.execute(
        select(tables.timers)
        .where(timers.aggregate_id.in_(subjects), timers.state == state)
        .order_by(timers.due_at)
        .limit(MOST)
    )
    return found + [_timer_effect(row) for row in rows]


async def pending_effects(
    session: AsyncSession, tables: EventingTables, subjects: Sequence[str]
) -> list[Effect]:
    return await effects_in(session, tables, subjects, PENDING)


async def failed_effects(
    session: AsyncSession, tables: EventingTables, subjects: Sequence[str]
) -> list[Effect]:
    return await effects_in(session, tables, subjects, FAILED)


async def open_incidents(
    session: AsyncSession, tables: EventingTables, subjects: Sequence[str]
) -> list[Incident]:
    t = tables.incidents.c
    named: list[ColumnElement[bool]] = [t.subject_id.in_(subjects)]
    named += [t.subject_id.endswith(f":{subject}", autoescape=True) for subject in subjects]
    query = select(tables.incidents).where(t.state == OPEN, or_(*named)).order_by(t.opened_at)
    return [incident_of(row) for row in await session.execute(query)]


async def trace_id_of(
    session: AsyncSession, tables: EventingTables, subjects: Sequence[str]
) -> str:
    """The trace of the subjects' first effect that carries one: their outbox rows (the
    oldest first, dispatched ones too), then their timers; empty when none does."""
    outbox, timers = tables.outbox.c, tables.timers.c
    for query in (
        select(outbox.headers).where(outbox.key.in_(subjects)).order_by(outbox.seq),
        select(timers.headers).where(timers.aggregate_id.in_(subjects)).order_by(timers.created_at),
    ):
        for (headers,) in await session.execute(query.limit(MOST)):
            found = trace_id_in(headers)
            if found:
                return found
    return ""


def trace_id_in(headers: Any) -> str:
    """The trace id of a stored carrier's traceparent, or "" when it has no valid one."""
    parent = headers.get("traceparent", "") if isinstance(headers, dict) else ""
    matched = _TRACEPARENT.fullmatch(parent) if isinstance(parent, str) else None
    if matched is None or matched.group(1) == _NO_TRACE:
        return ""
    return matched.group(1)


def _outbox_effect(row: Row[Any]) -> Effect:
    return Effect(
        source=OUTBOX,
        effect_id=row.effect_id,
        name=row.event_type,
        subject=row.key,
        state=row.state,
        attempts=row.attempts,
        created_at=row.created_at,
        dispatch_generation=row.dispatch_generation,
        last_error=row.last_error,
    )


def _timer_effect(row: Row[Any]) -> Effect:
    return Effect(
        source=TIMER,
        effect_id=row.timer_id,
        name=row.kind,
        subject=row.aggregate_id,
        state=row.state,
        attempts=row.attempts,
        created_at=row.created_at,
        last_error=row.last_error,
        due_at=row.due_at,
    )
