"""The consumer inbox: an event's effects and its "processed" marker in one transaction.

A redelivered event finds its marker and changes nothing. Only the inbox's own unique-key
violation counts as a duplicate, and only after the marker is seen to exist; any other
database error is an error. Offsets are committed after the database commit, so a crash
redelivers rather than loses. A message whose handler keeps failing is parked after the
bound (a failed inbox row and a copy on the dead-letter topic) so it cannot stop its
partition; a later replay under a higher dispatch generation is applied once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from google.protobuf.message import Message
from liftfit.events.v1.envelope_pb2 import EventEnvelope
from opentelemetry.trace import SpanKind
from sqlalchemy import Table, func, select, update
from sqlalchemy.exc import IntegrityError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import driver_sql, envelope, tracing
from servicekit.retry import RetryPolicy
from servicekit.schema import FAILED, PROCESSED

log = logging.getLogger(__name__)

EventHandler = Callable[[AsyncSession, EventEnvelope, Message], Awaitable[None]]


@dataclass(frozen=True)
class Delivery:
    """What the inbox needs of one Kafka record."""

    topic: str
    partition: int
    offset: int
    value: bytes
    headers: dict[str, str]

    @classmethod
    def of(cls, record: ConsumerRecord[Any, Any]) -> Delivery:
        return cls(
            topic=record.topic,
            partition=record.partition,
            offset=record.offset,
            value=record.value or b"",
            headers=tracing.carrier_from_pairs(record.headers or ()),
        )

    @property
    def generation(self) -> int:
        return int(self.headers.get("dispatch-generation", "0") or 0)


class Inbox:
    """Applies deliveries to one consumer's handlers, once each."""

    def __init__(
        self,
        consumer_name: str,
        sessions: async_sessionmaker[AsyncSession],
        inbox: Table,
        handlers: Mapping[str, EventHandler],
        dead_letters: AIOKafkaProducer | None = None,
        policy: RetryPolicy | None = None,
    ) -> None:
        self.name = consumer_name
        self._sessions = sessions
        self._inbox = inbox
        self._handlers = handlers
        self._dead_letters = dead_letters
        self._policy = policy or RetryPolicy(max_attempts=5, base_delay_s=0.2, max_delay_s=5)
        self._tracer = tracing.tracer("servicekit.inbox")

    async def deliver(self, delivery: Delivery) -> str:
        """Applies one delivery; returns processed, duplicate, ignored or parked."""
        try:
            event = envelope.parse(delivery.value)
        except Exception as error:  # an unreadable message can never succeed
            return await self._park(delivery, None, error)
        attempts = 0
        while True:
            try:
                return await self._apply(delivery, event)
            except (OperationalError, InterfaceError) as error:
                # The database is unreachable or the transaction was aborted by the server:
                # an outage, not a poison message, so it spends no attempts.
                log.warning("%s: waiting for the database: %r", self.name, error)
                await asyncio.sleep(self._policy.delay_after(1))
            except Exception as error:
                attempts += 1
                log.warning(
                    "%s: %s failed (attempt %d): %r", self.name, event.event_id, attempts, error
                )
                if self._policy.exhausted(attempts):
                    return await self._park(delivery, event, error)
                await asyncio.sleep(self._policy.delay_after(attempts))

    async def _apply(self, delivery: Delivery, event: EventEnvelope) -> str:
        with self._tracer.start_as_current_span(
            f"consume {delivery.topic}",
            context=tracing.context_from(delivery.headers),
            kind=SpanKind.CONSUMER,
            attributes={"messaging.message.id": event.event_id, "consumer": self.name},
        ):
            try:
                return await self._apply_once(delivery, event)
            except IntegrityError as error:
                if driver_sql.constraint_of(error) == "inbox_pkey" and await self._marker_exists(
                    event
                ):
                    return "duplicate"  # a concurrent delivery of the same event won
                raise

    async def _apply_once(self, delivery: Delivery, event: EventEnvelope) -> str:
        async with self._sessions() as session, session.begin():
            marker = await self._lock_marker(session, event.event_id)
            if marker is not None and _already_handled(marker, delivery.generation):
                return "duplicate"
            handler = self._handlers.get(event.event_type)
            if handler is not None:
                await handler(session, event, envelope.unpack(event))
            await self._write_marker(session, delivery, event, marker, PROCESSED, None)
            return "processed" if handler is not None else "ignored"

    async def _lock_marker(self, session: AsyncSession, event_id: str) -> Any:
        t = self._inbox.c
        query = (
            select(t.state, t.dispatch_generation, t.attempts)
            .where(t.consumer == self.name, t.event_id == event_id)
            .with_for_update()
        )
        return (await session.execute(query)).one_or_none()

    async def _write_marker(
        self,
        session: AsyncSession,
        delivery: Delivery,
        event: EventEnvelope,
        marker: Any,
        state: str,
        error: BaseException | None,
    ) -> None:
        values: dict[str, Any] = {
            "state": state,
            "dispatch_generation": delivery.generation,
            "last_error": repr(error)[:2000] if error else None,
            "topic": delivery.topic,
            "partition": delivery.partition,
            "offset": delivery.offset,
            "processed_at": func.now(),
            "payload": delivery.value if state == FAILED else None,
        }
        if marker is None:
            await session.execute(
                self._inbox.insert().values(
                    consumer=self.name,
                    event_id=event.event_id,
                    event_type=event.event_type,
                    attempts=1,
                    **values,
                )
            )
        else:
            t = self._inbox.c
            await session.execute(
                update(self._inbox)
                .where(t.consumer == self.name, t.event_id == event.event_id)
                .values(attempts=t.attempts + 1, **values)
            )

    async def _marker_exists(self, event: EventEnvelope) -> bool:
        async with self._sessions() as session:
            t = self._inbox.c
            query = select(t.event_id).where(t.consumer == self.name, t.event_id == event.event_id)
            return (await session.execute(query)).first() is not None

    async def _park(
        self, delivery: Delivery, event: EventEnvelope | None, error: BaseException
    ) -> str:
        log.error(
            "%s: parking message %s/%d@%d: %r",
            self.name,
            delivery.topic,
            delivery.partition,
            delivery.offset,
            error,
        )
        placeholder = event or EventEnvelope(
            event_id=f"unreadable:{delivery.topic}:{delivery.partition}:{delivery.offset}",
            event_type="unreadable",
        )
        async with self._sessions() as session, session.begin():
            marker = await self._lock_marker(session, placeholder.event_id)
            await self._write_marker(session, delivery, placeholder, marker, FAILED, error)
        if self._dead_letters is not None:
            await self._copy_to_dead_letters(delivery, error)
        return "parked"

    async def _copy_to_dead_letters(self, delivery: Delivery, error: BaseException) -> None:
        # The failed inbox row is the durable record; the dead-letter copy is a convenience
        # for tools that read topics, so failing to write it must not stop the partition.
        assert self._dead_letters is not None
        headers = [(k, v.encode()) for k, v in delivery.headers.items()]
        headers.append(("parked-error", repr(error)[:500].encode()))
        try:
            await asyncio.wait_for(
                self._dead_letters.send_and_wait(
                    f"{delivery.topic}.dlq", value=delivery.value, headers=headers
                ),
                10,
            )
        except Exception as dlq_error:
            log.error(
                "%s: dead-letter copy of %s/%d@%d failed: %r",
                self.name,
                delivery.topic,
                delivery.partition,
                delivery.offset,
                dlq_error,
            )


def _already_handled(marker: Any, generation: int) -> bool:
    # A parked event is applied again only when a deliberate replay raised its generation.
    return bool(marker.state == PROCESSED or marker.dispatch_generation >= generation)


class InboxConsumer:
    """Feeds Kafka records to an Inbox and commits offsets after the database commit."""

    def __init__(self, consumer: AIOKafkaConsumer, inbox: Inbox) -> None:
        self._consumer = consumer
        self._inbox = inbox

    async def run(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            batches = await self._consumer.getmany(timeout_ms=200, max_records=500)
            for partition, records in batches.items():
                await self._deliver_partition(partition, records)

    async def _deliver_partition(
        self, partition: TopicPartition, records: list[ConsumerRecord[Any, Any]]
    ) -> None:
        for record in records:
            await self._inbox.deliver(Delivery.of(record))
        await self._consumer.commit({partition: records[-1].offset + 1})
