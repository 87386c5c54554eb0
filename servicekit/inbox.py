"""The consumer inbox: an event's effects and its "processed" marker in one transaction.

A redelivered event finds its marker and changes nothing. Only the inbox's own unique-key
violation counts as a duplicate, and only after the marker is seen to exist; any other
database error is an error. Offsets are committed after the database commit, so a crash
redelivers rather than loses.

Nothing in a record is trusted: key, value and headers are checked before any handler
runs (see `records`), and a record that fails a check, or whose handler fails for a
reason retrying cannot cure, is parked: a failed inbox row with the reason, plus a copy on
`<topic>.dlq`, and the partition moves on. A database outage parks nothing: the delivery
waits, spending no attempts. Deadlocks and serialization failures are retried a bounded
number of times, then parked. A later replay under a higher dispatch generation is
applied once.

An event whose type has no handler here is ignored before the database: it has no
effect, so its redelivery is harmless and it needs no marker, no transaction and no span
(it is no part of any booking's story); it is counted and logged at DEBUG.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from aiokafka import AIOKafkaProducer
from google.protobuf.message import Message
from liftfit.events.v1.envelope_pb2 import EventEnvelope
from opentelemetry.trace import SpanKind
from sqlalchemy import Table, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import driver_sql, logs, tracing
from servicekit.faults import Fault, broker_unreachable, classify
from servicekit.kafka import ProducerLink, producer_broken
from servicekit.metrics.counters import (
    INBOX_APPLIED,
    INBOX_DUPLICATES,
    INBOX_IGNORED,
    INBOX_PARKED,
)
from servicekit.outage import OutageLog
from servicekit.records import BadRecord, Delivery, Incoming, read_delivery
from servicekit.retry import RetryPolicy
from servicekit.schema import FAILED, PROCESSED

log = logging.getLogger(__name__)
_TRACE_HEADERS = ("traceparent", "tracestate", "baggage")
# A dead-letter copy is tried this often (through a broken producer's replacement or a
# short broker outage), waiting this long for each acknowledgement.
COPY_ATTEMPTS = 8
COPY_ACK_WAIT_S = 30.0

EventHandler = Callable[[AsyncSession, EventEnvelope, Message], Awaitable[None]]

__all__ = ["Delivery", "EventHandler", "Inbox"]


class Inbox:
    """Applies deliveries to one consumer's handlers, once each."""

    def __init__(
        self,
        consumer_name: str,
        sessions: async_sessionmaker[AsyncSession],
        inbox: Table,
        handlers: Mapping[str, EventHandler],
        dead_letters: ProducerLink | None = None,
        policy: RetryPolicy | None = None,
    ) -> None:
        self.name = consumer_name
        self._sessions = sessions
        self._inbox = inbox
        self._sql = _MarkerSql.of(inbox)
        self._handlers = handlers
        self._dead_letters = dead_letters
        self._policy = policy or RetryPolicy(max_attempts=5, base_delay_s=0.2, max_delay_s=5)
        self._tracer = tracing.tracer("servicekit.inbox")
        self._database = OutageLog(log, f"{consumer_name} inbox: the database")
        self._copies: set[asyncio.Task[None]] = set()

    async def deliver(self, delivery: Delivery) -> str:
        """Applies one delivery; returns processed, duplicate, ignored or parked.

        Never raises for anything in the record or its handler: the worst outcome of a
        record is `parked`. It waits through a database outage instead of returning.
        """
        try:
            incoming = read_delivery(delivery)
        except BadRecord as bad:
            return await self._park(delivery, None, bad.reason)
        except Exception as error:  # a check that itself failed: still the record's fault
            return await self._park(delivery, None, f"unreadable record: {type(error).__name__}")
        handler = self._handlers.get(incoming.event_type)
        if handler is None:
            return self._ignore(delivery, incoming)
        conflicts = 0
        while True:
            try:
                outcome = await self._apply(delivery, incoming, handler)
                self._database.succeeded()
                counter = INBOX_DUPLICATES if outcome == "duplicate" else INBOX_APPLIED
                counter.labels(delivery.topic).inc()
                return outcome
            except Exception as error:
                fault = classify(error)
                if fault is Fault.OUTAGE:
                    self._database.failed(error)
                    await asyncio.sleep(self._policy.delay_after(2))
                    continue
                if fault is Fault.CONFLICT:
                    conflicts += 1
                    if not self._policy.exhausted(conflicts):
                        await asyncio.sleep(self._policy.delay_after(conflicts))
                        continue
                log.warning("%s: %s failed (%s): %r", self.name, incoming.event_id, fault, error)
                return await self._park(delivery, incoming, _reason_of(error, fault))

    def _ignore(self, delivery: Delivery, incoming: Incoming) -> str:
        INBOX_IGNORED.labels(delivery.topic).inc()
        log.debug("%s: ignored %s %s", self.name, incoming.event_type, incoming.event_id)
        return "ignored"

    async def _apply(self, delivery: Delivery, incoming: Incoming, handler: EventHandler) -> str:
        with (
            self._tracer.start_as_current_span(
                f"consume {delivery.topic}",
                context=tracing.context_from(incoming.trace_context),
                kind=SpanKind.CONSUMER,
                attributes={
                    "messaging.message.id": incoming.event_id,
                    "messaging.operation.type": "process",
                    "consumer": self.name,
                },
            ),
            logs.about(**_ids_of(incoming)),
        ):
            outcome = await self._apply_or_find_duplicate(delivery, incoming, handler)
            log.info("%s: %s %s %s", self.name, outcome, incoming.event_type, incoming.event_id)
            return outcome

    async def _apply_or_find_duplicate(
        self, delivery: Delivery, incoming: Incoming, handler: EventHandler
    ) -> str:
        try:
            return await self._apply_once(delivery, incoming, handler)
        except IntegrityError as error:
            duplicate_key = driver_sql.constraint_of(error) == "inbox_pkey"
            if duplicate_key and await self._marker_exists(incoming.event_id):
                return "duplicate"  # a concurrent delivery of the same event won
            raise

    async def _apply_once(
        self, delivery: Delivery, incoming: Incoming, handler: EventHandler
    ) -> str:
        async with self._sessions() as session, session.begin():
            marker = await self._lock_marker(session, incoming.event_id)
            if marker is not None and _already_handled(marker, incoming.generation):
                return "duplicate"
            await handler(session, incoming.envelope, incoming.payload())
            values = _marker_values(delivery, incoming.generation, PROCESSED, None)
            await self._write_marker(
                session, incoming.event_id, incoming.event_type, marker, values
            )
            return "processed"

    async def _lock_marker(self, session: AsyncSession, event_id: str) -> Any:
        params = {"consumer": self.name, "event_id": event_id}
        return await driver_sql.fetch_one(session, self._sql.lock, params)

    async def _write_marker(
        self,
        session: AsyncSession,
        event_id: str,
        event_type: str,
        marker: Any,
        values: dict[str, Any],
    ) -> None:
        key = {"consumer": self.name, "event_id": event_id}
        if marker is None:
            params = {**key, "event_type": event_type, "attempts": 1, **values}
            await driver_sql.execute(session, self._sql.insert, params)
            return
        params = {**key, "attempts": marker.attempts + 1, **values}
        await driver_sql.execute(session, self._sql.update, params)

    async def _marker_exists(self, event_id: str) -> bool:
        async with self._sessions() as session:
            t = self._inbox.c
            query = select(t.event_id).where(t.consumer == self.name, t.event_id == event_id)
            return (await session.execute(query)).first() is not None

    async def _park(self, delivery: Delivery, incoming: Incoming | None, reason: str) -> str:
        log.error(
            "%s: parking %s/%d@%d: %s",
            self.name,
            delivery.topic,
            delivery.partition,
            delivery.offset,
            reason,
        )
        event_id = incoming.event_id if incoming else delivery.placeholder_id
        event_type = incoming.event_type if incoming else "unreadable"
        generation = incoming.generation if incoming else 0
        values = _marker_values(delivery, generation, FAILED, reason)
        while True:  # the parked row is the durable record: wait for the database to take it
            try:
                async with self._sessions() as session, session.begin():
                    marker = await self._lock_marker(session, event_id)
                    await self._write_marker(session, event_id, event_type, marker, values)
                self._database.succeeded()
                break
            except Exception as error:
                if classify(error) is Fault.PERMANENT:
                    raise
                self._database.failed(error)
                await asyncio.sleep(self._policy.delay_after(2))
        self._copy_to_dead_letters(delivery, reason)
        INBOX_PARKED.labels(delivery.topic).inc()
        return "parked"

    def _copy_to_dead_letters(self, delivery: Delivery, reason: str) -> None:
        # The failed inbox row is the durable record; the dead-letter copy is a convenience
        # for tools that read topics, so it is sent in the background and its failure
        # never stops the partition.
        if self._dead_letters is None:
            return
        task = asyncio.create_task(self._send_copy(self._dead_letters, delivery, reason))
        self._copies.add(task)
        task.add_done_callback(self._copies.discard)

    async def _send_copy(self, link: ProducerLink, delivery: Delivery, reason: str) -> None:
        """Sends the copy, on a new producer if the current one turns out broken, and
        through a passing broker outage; gives up, saying so, after a bounded number of
        tries or when the broker refuses the copy itself."""
        for attempt in range(1, COPY_ATTEMPTS + 1):
            producer = link.current or await link.connect_within(COPY_ACK_WAIT_S)
            if producer is None:
                continue
            try:
                await self._send_copy_with(producer, delivery, reason)
                return
            except Exception as error:
                if producer_broken(producer, error):
                    await link.replace(producer, error)
                elif not (broker_unreachable(error) or isinstance(error, TimeoutError)):
                    return self._copy_lost(delivery, error)  # the broker refuses the copy
                await asyncio.sleep(self._policy.delay_after(attempt))
        self._copy_lost(delivery, TimeoutError(f"not sent after {COPY_ATTEMPTS} tries"))

    async def _send_copy_with(
        self, producer: AIOKafkaProducer, delivery: Delivery, reason: str
    ) -> None:
        topic = f"{delivery.topic}.dlq"
        # The copy continues this trace: its produce span's context replaces the original's.
        span, trace_headers = tracing.produce_span(topic, _event_id_of(delivery))
        headers = [*_copied_headers(delivery), ("parked-reason", reason.encode()), *trace_headers]
        try:
            value, key = delivery.value, delivery.key
            sent = await producer.send(topic, value=value, key=key, headers=headers)
        finally:
            span.end()
        await asyncio.wait_for(sent, COPY_ACK_WAIT_S)

    def _copy_lost(self, delivery: Delivery, error: BaseException) -> None:
        log.error(
            "%s: dead-letter copy of %s/%d@%d failed: %r",
            self.name,
            delivery.topic,
            delivery.partition,
            delivery.offset,
            error,
        )


def _ids_of(incoming: Incoming) -> dict[str, str]:
    """The booking, payment and grant ids of an event, for its log lines. A payload that
    does not parse binds none: applying it parks it, saying why."""
    try:
        return logs.ids_in(incoming.payload())
    except Exception:
        return {}


def _copied_headers(delivery: Delivery) -> list[tuple[str, bytes]]:
    """The record's headers for its dead-letter copy, without the original's trace
    context: the copy carries its own produce span's (one record, one traceparent)."""
    return [
        (name, value)
        for name, value in delivery.raw_headers()
        if name.lower() not in _TRACE_HEADERS
    ]


def _event_id_of(delivery: Delivery) -> str:
    """The copy's message id for its span: the original's event-id header as it came."""
    for name, value in delivery.raw_headers():
        if name == "event-id":
            return value.decode("utf-8", "replace")
    return delivery.placeholder_id


@dataclass(frozen=True)
class _MarkerSql:
    """The marker's statements, on the driver: through SQLAlchemy they cost several times
    the driver's CPU, and every delivery applied runs two of them (servicekit.driver_sql)."""

    lock: str
    insert: str
    update: str

    @classmethod
    def of(cls, inbox: Table) -> _MarkerSql:
        key = ("consumer", "event_id")
        written = (*_MARKER_COLUMNS, "attempts")
        return cls(
            lock=driver_sql.select_sql(inbox, _LOCKED_COLUMNS, key, for_update=True),
            insert=driver_sql.insert_sql(inbox, (*key, "event_type", *written)),
            update=driver_sql.update_sql(inbox, written, key),
        )


_LOCKED_COLUMNS = ("state", "dispatch_generation", "attempts")
_MARKER_COLUMNS = (
    "state",
    "dispatch_generation",
    "last_error",
    "topic",
    "partition",
    "offset",
    "processed_at",
    "payload",
)


def _marker_values(
    delivery: Delivery, generation: int, state: str, reason: str | None
) -> dict[str, Any]:
    return {
        "state": state,
        "dispatch_generation": generation,
        "last_error": reason,
        "topic": delivery.topic,
        "partition": delivery.partition,
        "offset": delivery.offset,
        "processed_at": datetime.now(UTC),
        # Kept for a parked message, so an operator can see what failed.
        "payload": delivery.value if state == FAILED else None,
    }


def _already_handled(marker: Any, generation: int) -> bool:
    # A parked event is applied again only when a deliberate replay raised its generation.
    return bool(marker.state == PROCESSED or marker.dispatch_generation >= generation)


def _reason_of(error: BaseException, fault: Fault) -> str:
    what = "kept conflicting" if fault is Fault.CONFLICT else "failed"
    text = str(error).splitlines()[0] if str(error) else ""
    # Bounded and without NUL, which a text column refuses.
    return f"handler {what}: {type(error).__name__}: {text[:300]}".replace("\x00", "?")
