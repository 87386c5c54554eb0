"""One database transaction of the payment service, with its repositories and effects.

Events are written to the outbox and jobs to the timers table in the same transaction
as the change that causes them; nothing leaves the service before the commit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf.message import Message
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit.outbox import Outbox
from servicekit.timers import Timers
from services.payment.adapters.orm import Tables
from services.payment.adapters.repository import (
    IncidentRepository,
    OrderRepository,
    PaymentRepository,
    TimerQueries,
)


@dataclass(frozen=True)
class Effects:
    """Where effects go: the outbox, its topic, and the durable timers."""

    outbox: Outbox
    timers: Timers
    topic: str


class PaymentTransaction:
    def __init__(self, session: AsyncSession, tables: Tables, effects: Effects) -> None:
        self.session = session
        self.payments = PaymentRepository(session, tables)
        self.orders = OrderRepository(session, tables)
        self.incidents = IncidentRepository(session, tables)
        self.jobs = TimerQueries(session, tables)
        self._effects = effects

    async def publish(self, key: str, event: Message) -> None:
        """Appends an event; `key` is the booking or order id, so its events stay in order."""
        await self._effects.outbox.append(self.session, self._effects.topic, key, event)

    async def schedule(
        self, kind: str, aggregate_id: str, expected: dict[str, Any], delay_s: float = 0.0
    ) -> None:
        due = datetime.now(UTC) + timedelta(seconds=delay_s)
        await self._effects.timers.schedule(self.session, kind, aggregate_id, due, expected)


class UnitOfWork:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], tables: Tables, effects: Effects
    ) -> None:
        self._sessions = sessions
        self._tables = tables
        self._effects = effects

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[PaymentTransaction]:
        async with self._sessions() as session, session.begin():
            yield self.within(session)

    @asynccontextmanager
    async def read(self) -> AsyncIterator[PaymentTransaction]:
        async with self._sessions() as session:
            yield self.within(session)

    def within(self, session: AsyncSession) -> PaymentTransaction:
        """For the inbox and the timers, which already run inside a transaction."""
        return PaymentTransaction(session, self._tables, self._effects)
