"""A unit of work: one transaction holding the repositories, the outbox and the timers.

Every effect of a change (the event to publish, the timer to fire) is written through
it, in the same transaction as the change, so none can be lost or sent for a change that
rolled back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime

from google.protobuf.message import Message
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import driver_sql
from servicekit.outbox import Outbox
from servicekit.timers import Timers
from services.booking.adapters.catalogue import SpaceRepository, UnownedPaymentRepository
from services.booking.adapters.disclosures import DisclosureRepository
from services.booking.adapters.passes import PassRepository
from services.booking.adapters.repository import (
    AttemptRepository,
    BookingRepository,
    SlotRepository,
    slot_taken_is_unavailable,
)

RELEASE_UNPAID_HOLD = "release_unpaid_hold"


@dataclass(frozen=True)
class Policy:
    """The service's configuration as the handlers see it."""

    idempotency_secret: bytes
    hold_seconds: int
    terms_version: str


class UnitOfWork:
    def __init__(
        self, session: AsyncSession, outbox: Outbox, timers: Timers, topic: str, policy: Policy
    ) -> None:
        self.session = session
        self.policy = policy
        self.spaces = SpaceRepository(session)
        self.slots = SlotRepository(session)
        self.bookings = BookingRepository(session)
        self.attempts = AttemptRepository(session)
        self.passes = PassRepository(session)
        self.disclosures = DisclosureRepository(session)
        self.unowned_payments = UnownedPaymentRepository(session)
        self._outbox = outbox
        self._timers = timers
        self._topic = topic

    @asynccontextmanager
    async def writes_together(self) -> AsyncIterator[None]:
        """The block's writes reach the database in one round trip (a pipeline).

        They are queued, so a violation shows when the block ends: a taken slot is
        reported there as slot_unavailable.
        """
        with slot_taken_is_unavailable():
            async with driver_sql.pipeline(self.session):
                yield

    async def publish(self, booking_id: str, event: Message) -> None:
        """Appends a booking event to the outbox; the booking id keeps its events in order."""
        await self._outbox.append(self.session, self._topic, booking_id, event)

    async def schedule_hold_release(self, booking_id: str, due_at: datetime) -> None:
        # Never cancelled: it fires and finds the booking no longer pending. Cancelling it
        # would lock the timer row after the booking row, the opposite of the timer runner.
        expected = {"booking_id": booking_id, "state": "pending"}
        await self._timers.schedule(self.session, RELEASE_UNPAID_HOLD, booking_id, due_at, expected)


class UnitOfWorkFactory:
    """Opens units of work, or joins the transaction an inbox or timer runner already holds."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        outbox: Outbox,
        timers: Timers,
        topic: str,
        policy: Policy,
    ) -> None:
        self.sessions = sessions
        self.policy = policy
        self._outbox = outbox
        self._timers = timers
        self._topic = topic

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[UnitOfWork]:
        """Commits when the block ends normally, rolls back when it raises."""
        async with self.sessions() as session, session.begin():
            yield self.joining(session)

    def joining(self, session: AsyncSession) -> UnitOfWork:
        return UnitOfWork(session, self._outbox, self._timers, self._topic, self.policy)
