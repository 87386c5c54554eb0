"""A unit of work: one transaction, the service's repositories, and its effects.

Every effect of a change (the event to publish, the timer to fire) is written through
the unit of work, in the same transaction as the change, so none can be lost or sent for
a change that rolled back. Every service has the same shape:

- an entry point opens `uows.transaction()` (commits when the block ends, rolls back
  when it raises) and hands the unit of work to a handler;
- the inbox and the timer runner already hold a transaction, and a handler joins it with
  `uows.joining(session)` (see `bind_events` and `bind_timers`);
- a service's own unit of work subclasses `UnitOfWork` to add its repositories.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from google.protobuf.message import Message
from liftfit.events.v1.envelope_pb2 import EventEnvelope
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import driver_sql
from servicekit.inbox import EventHandler
from servicekit.outbox import Outbox
from servicekit.retry import RetryPolicy
from servicekit.timers import DueTimer, TimerHandler, Timers, tries_of


@dataclass(frozen=True)
class Effects:
    """Where a service's effects go: its outbox and topic, and its durable timers."""

    outbox: Outbox
    timers: Timers
    topic: str


class UnitOfWork:
    def __init__(self, session: AsyncSession, effects: Effects) -> None:
        self.session = session
        self._effects = effects

    async def publish(self, aggregate_id: str, event: Message) -> None:
        """Appends an event to the outbox; the aggregate id keeps its events in order."""
        await self._effects.outbox.append(self.session, self._effects.topic, aggregate_id, event)

    async def schedule(
        self,
        kind: str,
        aggregate_id: str,
        expected: dict[str, Any],
        delay_s: float = 0.0,
        due_at: datetime | None = None,
    ) -> None:
        """A durable timer, carrying the state its handler expects to find."""
        due = due_at or datetime.now(UTC) + timedelta(seconds=delay_s)
        await self._effects.timers.schedule(self.session, kind, aggregate_id, due, expected)

    async def has_pending(self, kind: str, aggregate_id: str) -> bool:
        """Is a timer of this kind still to fire for the aggregate?"""
        return await self._effects.timers.has_pending(self.session, kind, aggregate_id)

    async def retry_later(self, timer: DueTimer, policy: RetryPolicy) -> bool:
        """Schedules the next try of an outbound job, the same job with the same expected
        state; False once the policy's tries are used up (the caller reports it)."""
        tries = tries_of(timer)
        if policy.exhausted(tries):
            return False
        expected = {**timer.expected, "try": tries + 1}
        await self.schedule(timer.kind, timer.aggregate_id, expected, policy.delay_after(tries))
        return True

    @asynccontextmanager
    async def writes_together(self) -> AsyncIterator[None]:
        """The block's writes reach the database in one round trip (a pipeline); a
        violation of any of them shows when the block ends."""
        async with driver_sql.pipeline(self.session):
            yield

    @asynccontextmanager
    async def reads_together(self) -> AsyncIterator[None]:
        """Queries sent in the block (`send_...`) travel in one round trip; read their
        results after it. They run in the order sent, so locks are taken in that order."""
        async with driver_sql.pipeline(self.session):
            yield

    @asynccontextmanager
    async def last_writes(self) -> AsyncIterator[None]:
        """The block's writes and the commit reach the database in one round trip; the
        handler returns after it, for nothing may run once the transaction has committed."""
        async with driver_sql.pipeline(self.session):
            yield
            await driver_sql.commit_in_pipeline(self.session)


U = TypeVar("U", bound=UnitOfWork)


class UnitOfWorkFactory(Generic[U]):
    """Opens units of work, or joins the transaction an inbox or timer runner holds."""

    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], build: Callable[[AsyncSession], U]
    ) -> None:
        self.sessions = sessions
        self._build = build

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[U]:
        async with self.sessions() as session, session.begin():
            yield self._build(session)

    @asynccontextmanager
    async def transaction_on_driver(self) -> AsyncIterator[U]:
        """A transaction on a pooled connection without an ORM session, for a hot path
        whose statements are all driver SQL (servicekit.driver_sql) and whose first ones
        are a `reads_together` block: setting up a session cost more than the SQL.

        The connection is put in autocommit mode, so the driver begins nothing by itself:
        the first block sends BEGIN with its reads, the last writes send COMMIT, and
        whatever is still open at the end is committed, or rolled back on an exception.
        The session handed to the unit of work is bound to nothing, so ORM code fails at
        once instead of running in another transaction; a statement before the first
        block would commit on its own, so a writer sends none. A lone statement may: a read
        (GetBooking) is consistent by itself, and a server-side function (the booking
        service's card checkout) is one transaction by itself; nothing is left to commit.
        """
        async with driver_sql.transaction(self.sessions.kw["bind"]) as session:
            yield self._build(session)

    def joining(self, session: AsyncSession) -> U:
        return self._build(session)


Reaction = Callable[[U, Any], Awaitable[None]]
TimerReaction = Callable[[U, DueTimer], Awaitable[None]]


def bind_events(
    uows: UnitOfWorkFactory[U], reactions: Mapping[type[Message], Reaction[U]]
) -> dict[str, EventHandler]:
    """The inbox's handlers: each event type's reaction, joining the inbox's transaction."""

    def bound(kind: type[Message], reaction: Reaction[U]) -> EventHandler:
        async def handle(session: AsyncSession, envelope: EventEnvelope, event: Message) -> None:
            if not isinstance(event, kind):
                raise TypeError(f"{envelope.event_id} is not a {kind.DESCRIPTOR.full_name}")
            await reaction(uows.joining(session), event)

        return handle

    return {kind.DESCRIPTOR.full_name: bound(kind, r) for kind, r in reactions.items()}


def bind_timers(
    uows: UnitOfWorkFactory[U], reactions: Mapping[str, TimerReaction[U]]
) -> dict[str, TimerHandler]:
    """The timer runner's transactional handlers, joining the runner's transaction."""

    def bound(reaction: TimerReaction[U]) -> TimerHandler:
        async def handle(session: AsyncSession, timer: DueTimer) -> None:
            await reaction(uows.joining(session), timer)

        return handle

    return {kind: bound(reaction) for kind, reaction in reactions.items()}
