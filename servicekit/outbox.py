"""The transactional outbox: effects written in the same transaction as the domain change.

Writing a change and then calling the broker leaves a gap in which the database has
committed and the broker call fails; an outbox row closes it. The relay publishes the
row later, at least once; consumers de-duplicate on the effect id.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from google.protobuf.message import Message
from sqlalchemy import Row, Table, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit import driver_sql, envelope, tracing
from servicekit.schema import DISPATCHED, FAILED, PENDING


class UnknownEffect(LookupError):
    """No outbox row has that effect id."""


@dataclass(frozen=True)
class Backlog:
    """How many rows are in each state, and since when the oldest pending one waits."""

    counts: dict[str, int]
    oldest_pending_at: datetime | None


class Outbox:
    """Appends events to one service's outbox table inside the caller's transaction."""

    _COLUMNS = ("effect_id", "topic", "key", "event_type", "payload", "headers")

    def __init__(self, table: Table, producer: str) -> None:
        self.table = table
        self.producer = producer
        self._insert = driver_sql.insert_sql(table, self._COLUMNS)

    async def append(
        self,
        session: AsyncSession,
        topic: str,
        aggregate_id: str,
        event: Message,
        effect_id: uuid.UUID | None = None,
    ) -> uuid.UUID:
        effect_id = effect_id or uuid.uuid4()
        carrier = tracing.current_carrier()
        wrapped = envelope.wrap(event, aggregate_id, self.producer, carrier, effect_id)
        # Every domain change appends here: fixed SQL on the driver, pipelined when the
        # caller opened a pipeline (see driver_sql).
        await driver_sql.execute(
            session,
            self._insert,
            {
                "effect_id": effect_id,
                "topic": topic,
                "key": aggregate_id,
                "event_type": wrapped.event_type,
                "payload": wrapped.SerializeToString(),
                "headers": driver_sql.Jsonb(carrier),
            },
        )
        return effect_id

    async def replay(self, session: AsyncSession, effect_id: uuid.UUID) -> int:
        """Sends a row again under a new dispatch generation; returns that generation.

        The caller records the decision in the audit log in the same transaction.
        """
        result = await session.execute(
            update(self.table)
            .where(self.table.c.effect_id == effect_id)
            .values(
                state=PENDING,
                attempts=0,
                next_attempt_at=func.now(),
                last_error=None,
                dispatch_generation=self.table.c.dispatch_generation + 1,
            )
            .returning(self.table.c.dispatch_generation)
        )
        generation = result.scalar_one_or_none()
        if generation is None:
            raise UnknownEffect(str(effect_id))
        return int(generation)

    async def rows(
        self, session: AsyncSession, state: str | None = None, limit: int = 200
    ) -> Sequence[Row[Any]]:
        query = select(self.table).order_by(self.table.c.seq.desc()).limit(limit)
        if state is not None:
            query = query.where(self.table.c.state == state)
        return (await session.execute(query)).all()

    async def backlog(self, session: AsyncSession) -> Backlog:
        t = self.table.c
        query = select(t.state, func.count(), func.min(t.created_at)).group_by(t.state)
        counts = {state: 0 for state in (PENDING, DISPATCHED, FAILED)}
        oldest_pending_at = None
        for state, count, oldest in (await session.execute(query)).all():
            counts[str(state)] = int(count)
            if state == PENDING:
                oldest_pending_at = oldest
        return Backlog(counts, oldest_pending_at)
