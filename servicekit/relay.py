"""The outbox relay: publishes committed outbox rows to Kafka, at least once.

One replica's relay publishes at a time (servicekit.leadership), and the others take over
when it dies. Rows are claimed with FOR UPDATE SKIP LOCKED, so relays that overlap for a
moment, and the lanes of one relay, never publish the same row at the same time. A row is
marked dispatched only after the broker acknowledged it; if the relay dies in between, the
row is published again and consumers drop the copy by its effect id. No high-water mark is
kept, so a row that commits late is still claimed.

A row the broker did not acknowledge is judged by whose fault it was:
- the producer's: the broker refused the idempotent producer's state (a sequence gap after
  a broker restart, an unknown producer id, a fenced epoch; servicekit.kafka's
  PRODUCER_STATE_ERRORS), or the producer's sender died. Nothing is wrong with the row:
  the producer is replaced, and the row stays pending with its attempts intact and goes
  out on the new producer.
- the broker's passing trouble: it cannot be reached, does not answer in time, or a
  leader is moving (`_PASSING`). The row stays pending with its attempts intact.
- the row's own: anything else, such as a record too large or invalid, or a topic the
  broker does not have. The row spends an attempt, is retried with backoff, and is marked
  failed after the bound, visible to operators.
The producer is connected by the relay's own worker, so a service starts without Kafka.

The leading relay learns of committed rows from the outbox's notifications
(servicekit.outbox_listener) and polls only as a fallback: every `fallback_wait_s` while
it listens, every `idle_wait_s` (the old 50 ms) while the listening connection is down.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka import errors as kafka_errors
from sqlalchemy import Row, Table
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import driver_sql, tracing
from servicekit.faults import BROKER_OUTAGE_ERRORS
from servicekit.kafka import ProducerLink, broker_answers, producer_broken
from servicekit.leadership import Lease
from servicekit.metrics.counters import RELAY_FAILURES, RELAY_PUBLISHED
from servicekit.outage import OutageLog
from servicekit.outbox_listener import OutboxListener
from servicekit.partitions import partition_for
from servicekit.retry import RetryPolicy
from servicekit.schema import DISPATCHED, FAILED, PENDING
from servicekit.supervision import pause

log = logging.getLogger(__name__)
AfterAck = Callable[[Sequence[Row[Any]]], Awaitable[None]]
HELPER_LANE_REST_S = 0.5
# How long a listening relay waits for a notification before it asks anyway. Rows no
# notification announces are found this late: a refused row whose retry came due, a row an
# operator set pending again, a row committed while the listener was reconnecting. Idle, it
# is one question a second where polling asked 24.
FALLBACK_WAIT_S = 1.0


class BrokerUnavailable(RuntimeError):
    """Kafka could not be reached; the claimed rows stay pending with their attempts intact."""


# A leader moving or a request timing out is the broker's passing trouble, not the row's.
_PASSING = (
    *BROKER_OUTAGE_ERRORS,
    kafka_errors.NotLeaderForPartitionError,
    kafka_errors.LeaderNotAvailableError,
    kafka_errors.NotEnoughReplicasError,
    kafka_errors.NotEnoughReplicasAfterAppendError,
    asyncio.CancelledError,  # the producer gave the message up
)


@dataclass
class _Outcome:
    acked: list[int]  # the rows' seq: short to send back, and unique
    refused: list[tuple[Row[Any], BaseException]]
    outage: bool
    broken: BaseException | None  # what the producer's broken state was answered with


class OutboxRelay:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        outbox: Table,
        producer: ProducerLink,
        policy: RetryPolicy | None = None,
        batch_size: int = 1000,
        idle_wait_s: float = 0.05,
        partial_wait_s: float = 0.05,
        fallback_wait_s: float = FALLBACK_WAIT_S,
        after_broker_ack: AfterAck | None = None,
        lanes: int = 3,
    ) -> None:
        self._lanes = lanes
        self._sessions = sessions
        self._outbox = outbox
        self._link = producer
        self._policy = policy or RetryPolicy()
        self._batch_size = batch_size
        self._idle_wait_s = idle_wait_s
        self._partial_wait_s = partial_wait_s
        self._fallback_wait_s = fallback_wait_s
        # Fault injection for tests: runs between the broker's ack and the row's update.
        self._after_broker_ack = after_broker_ack
        self._engine = sessions.kw["bind"]
        self._claim_sql, self._mark_sql = _claim_sql(outbox.name), _mark_sql(outbox.name)
        self._due_sql = _due_sql(outbox.name)
        self._refused_sql = _refused_sql(outbox.name)
        # How many rows the last claim of any lane found: whether more are likely due.
        self._last_claim = 0
        self.lease = Lease(self._engine, f"relay of {outbox.name}")
        self.listener = OutboxListener(self._engine, outbox.name)

    async def run(self, stopping: asyncio.Event) -> None:
        """Publishes while this replica leads the service's relay (servicekit.leadership),
        in `lanes` claim-publish-mark loops; SKIP LOCKED keeps their batches disjoint.

        While one lane waits for the broker's acknowledgements another claims and marks,
        so the database and the broker work at the same time.
        """
        if await self._link.connect(stopping) is None:
            return
        await self.lease.lead(stopping, self._lanes_until)

    async def _lanes_until(self, until: asyncio.Event) -> None:
        listening = asyncio.create_task(self.listener.listen(until))
        try:
            await asyncio.gather(*(self._lane(until, first=i == 0) for i in range(self._lanes)))
        finally:
            listening.cancel()  # it may be waiting for a notification
            await asyncio.gather(listening, return_exceptions=True)

    async def _lane(self, stopping: asyncio.Event, first: bool) -> None:
        backoff = self._policy.base_delay_s
        outage = OutageLog(log, f"relay of {self._outbox.name}")
        while not stopping.is_set():
            if self._link.current is None and await self._link.connect(stopping) is None:
                return  # stopping while the broker was down
            try:
                published = await self.relay_batch(ask=first or not self.listener.listening)
                backoff = self._policy.base_delay_s
                outage.succeeded()
            except (BrokerUnavailable, DBAPIError, OSError) as error:
                outage.failed(error)
                await pause(stopping, backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            if published == 0 and first:
                await self._wait_for_commits(stopping)
            elif published < self._batch_size:
                await pause(stopping, self._rest_after(published, first))
                if first and self.listener.listening and self._last_claim < self._batch_size:
                    # The claim took every row due then; later commits announce themselves.
                    await self._wait_for_commits(stopping)

    async def _wait_for_commits(self, stopping: asyncio.Event) -> None:
        """The first lane, having taken every row that was due, waits for a notification
        (every `fallback_wait_s`, it asks anyway), or rests while nobody listens. A commit
        heard lets the next claim go ahead without asking first."""
        within = self._fallback_wait_s if self.listener.listening else self._idle_wait_s
        await self.listener.committed_or(stopping, within)

    def _rest_after(self, published: int, first: bool) -> float:
        """How long a lane rests after a batch that was not full.

        Caught up, rows are let gather for a moment: claiming a row or two per round trip
        cost as much CPU as the checkouts that wrote them (86 checkouts/s with the relay
        spinning, 161 without it). Only the first lane follows a trickle (woken by the
        outbox's notifications once it found nothing); the others rest longer and find
        full batches when they wake if a backlog has built up.
        """
        rest = self._idle_wait_s if published == 0 else self._partial_wait_s
        return rest if first else max(rest, HELPER_LANE_REST_S)

    async def relay_batch(self, ask: bool = True) -> int:
        """Publishes one batch of due rows; returns how many the broker acknowledged.

        Unless the last claim found rows or a commit was heard since, the lane asks first
        whether any are due. A helper lane of a listening relay does not ask (`ask`), and
        claims only while the claims come back full: a backlog. At a trickle the first
        lane claims only when it heard a commit (see `_lane`), so a row costs its claim
        and its marks, not also a question before them and an empty claim after them
        (three round trips and two transactions more).

        The transaction runs on a driver connection (servicekit.driver_pool) in two round
        trips: BEGIN with the claim, and the marks with COMMIT. Under a checkout load a
        lane finds a few dozen rows a batch, and an ORM session's begin, commit and
        greenlet crossings around them cost more than publishing the rows.
        """
        if not self._rows_likely(ask) and not (ask and await self._anything_due()):
            return 0
        async with driver_sql.transaction(self._engine) as session:
            self.listener.claiming()
            rows = await self._claim(session)
            self._last_claim = len(rows)
            if not rows:
                return 0
            producer = self._producer
            outcome = await self._publish(producer, rows)
            if self._after_broker_ack is not None and outcome.acked:
                await self._after_broker_ack(rows)
            async with driver_sql.pipeline(session):
                await self._mark_dispatched(session, outcome.acked)
                await self._mark_refused(session, outcome.refused)
                await driver_sql.commit_in_pipeline(session)
        if outcome.broken is not None:
            await self._link.replace(producer, outcome.broken)
        if outcome.outage:
            raise BrokerUnavailable("broker did not acknowledge; rows stay pending")
        return len(outcome.acked)

    def _rows_likely(self, ask: bool) -> bool:
        if ask:
            return self.listener.heard or self._last_claim > 0
        return self._last_claim >= self._batch_size

    async def _anything_due(self) -> bool:
        """Asked outside a transaction, in one round trip, while no rows are likely due:
        an empty claim took four (a session's BEGIN, the claim, COMMIT, the pool's reset)
        and 1.4 ms of CPU, and the lanes of an idle relay claim 24 times a second (3.4 %
        of a core, measured). After a claim that found rows the next one claims at once,
        since rows are likely due."""
        return await driver_sql.any_row(self._engine, self._due_sql, {})

    async def _claim(self, session: AsyncSession) -> Sequence[Any]:
        async with driver_sql.pipeline(session):  # BEGIN travels with it
            claimed = await driver_sql.queue(session, self._claim_sql, {"limit": self._batch_size})
        return claimed.rows()

    async def _publish(self, producer: AIOKafkaProducer, rows: Sequence[Row[Any]]) -> _Outcome:
        # Enqueue every row first and await the acknowledgements together: the producer
        # batches them per partition, which is where the throughput comes from.
        counts = _PartitionCounts(producer)
        deliveries: list[Any] = []
        span = tracing.publish_span([r.topic for r in rows], [r.traceparent or "" for r in rows])
        try:
            for row in rows:
                try:
                    partition = counts.partition_for(row.topic, row.key.encode())
                    deliveries.append(await _send(producer, row, partition))
                except Exception as error:  # refused before it was queued (too large, say)
                    deliveries.append(_failed(error))
        finally:
            span.end()
        results = [await _outcome_of(delivery) for delivery in deliveries]
        return await self._classify(producer, rows, results)

    @property
    def _producer(self) -> AIOKafkaProducer:
        producer = self._link.current
        if producer is None:
            raise BrokerUnavailable("the producer is not connected yet")
        return producer

    async def _classify(
        self, producer: AIOKafkaProducer, rows: Sequence[Row[Any]], results: list[Any]
    ) -> _Outcome:
        acked = [
            row.seq
            for row, result in zip(rows, results, strict=True)
            if not isinstance(result, BaseException)
        ]
        failures = [
            (row, result)
            for row, result in zip(rows, results, strict=True)
            if isinstance(result, BaseException)
        ]
        _count(rows, results)
        # Rows that met a broken producer or the broker's passing trouble stay pending
        # with their attempts intact; only the rows at fault themselves are refused.
        broken = next((e for _, e in failures if producer_broken(producer, e)), None)
        if broken is not None:
            failures = [(r, e) for r, e in failures if not producer_broken(producer, e)]
        passing = [(row, error) for row, error in failures if _passing(producer, row, error)]
        refused = [(row, error) for row, error in failures if not _passing(producer, row, error)]
        outage = bool(passing) and not await broker_answers(producer)
        return _Outcome(acked=acked, refused=refused, outage=outage, broken=broken)

    async def _mark_dispatched(self, session: AsyncSession, seqs: list[int]) -> None:
        if seqs:
            await driver_sql.execute(session, self._mark_sql, {"seqs": ",".join(map(str, seqs))})

    async def _mark_refused(
        self, session: AsyncSession, refused: list[tuple[Row[Any], BaseException]]
    ) -> None:
        for row, error in refused:
            attempts = row.attempts + 1
            exhausted = self._policy.exhausted(attempts)
            log.warning("outbox row %s refused (attempt %d): %r", row.effect_id, attempts, error)
            values = {
                "effect_id": row.effect_id,
                "attempts": attempts,
                "state": FAILED if exhausted else PENDING,
                "last_error": repr(error)[:2000],
                "delay_s": self._policy.delay_after(attempts),
            }
            await driver_sql.execute(session, self._refused_sql, values)


# Fixed SQL on the driver: the relay runs these once per batch, and building the statement
# through SQLAlchemy cost as much as executing it.
def _claim_sql(table: str) -> str:
    # Text, not objects: the relay only passes these on, and decoding a UUID or a JSON
    # document per row costs more than the database extracting the fields.
    return (
        "SELECT seq, effect_id::text AS effect_id, topic, key, payload,"
        " headers->>'traceparent' AS traceparent, headers->>'tracestate' AS tracestate,"
        f' attempts, dispatch_generation, event_type FROM "{table}"'
        f" WHERE state = '{PENDING}' AND next_attempt_at <= now()"
        " ORDER BY seq LIMIT %(limit)s FOR UPDATE SKIP LOCKED"
    )


def _due_sql(table: str) -> str:
    # The claim's condition without its locks: a row it sees may be claimed by another
    # lane before this one claims, which only makes that claim come back empty.
    return (
        f"SELECT 1 FROM \"{table}\" WHERE state = '{PENDING}' AND next_attempt_at <= now() LIMIT 1"
    )


def _mark_sql(table: str) -> str:
    # One text parameter split by the database, of the rows' seq (unique, and a fifth of
    # a UUID's length): an IN list of a thousand binds costs more than the update, and so
    # did adapting a list of a thousand ids into an array.
    return (
        f"UPDATE \"{table}\" SET state = '{DISPATCHED}', dispatched_at = now(),"
        " attempts = attempts + 1, last_error = NULL"
        " WHERE seq = ANY(string_to_array(%(seqs)s, ',')::bigint[])"
    )


def _refused_sql(table: str) -> str:
    # The next attempt's time from the database's clock, as every process reads it.
    return (
        f'UPDATE "{table}" SET attempts = %(attempts)s, state = %(state)s,'
        " last_error = %(last_error)s,"
        " next_attempt_at = now() + make_interval(secs => %(delay_s)s)"
        " WHERE effect_id = %(effect_id)s::uuid"
    )


def _passing(producer: AIOKafkaProducer, row: Row[Any], error: BaseException) -> bool:
    """A retriable error, for a topic the broker knows: the row is not at fault.

    A missing topic also ends in a time-out, but waiting cannot cure it, so that row
    spends its attempts and ends failed, visible to operators.
    """
    if not isinstance(error, _PASSING):
        return False
    topics = producer.client.cluster.topics()
    return not topics or row.topic in topics


class _PartitionCounts:
    """Each topic's partition count as the producer knows it, looked up once a batch."""

    def __init__(self, producer: AIOKafkaProducer) -> None:
        self._cluster = producer.client.cluster
        self._counts: dict[str, int] = {}

    def partition_for(self, topic: str, key: bytes) -> int | None:
        """Kafka's partition for the key (servicekit.partitions); None while the producer
        knows nothing of the topic yet, and then it decides itself."""
        count = self._counts.get(topic)
        if count is None:
            count = len(self._cluster.partitions_for_topic(topic) or ())
            if not count:
                return None
            self._counts[topic] = count
        return partition_for(key, count)


def _count(rows: Sequence[Row[Any]], results: list[Any]) -> None:
    """Each topic's acknowledged and unacknowledged rows, counted once per batch."""
    published: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    for row, result in zip(rows, results, strict=True):
        (failed if isinstance(result, BaseException) else published)[row.topic] += 1
    for topic, n in published.items():
        RELAY_PUBLISHED.labels(topic).inc(n)
    for topic, n in failed.items():
        RELAY_FAILURES.labels(topic).inc(n)


def _trace_headers(row: Row[Any]) -> list[tuple[str, bytes]]:
    """The W3C trace context stored with the row, without empty entries."""
    pairs = (("traceparent", row.traceparent), ("tracestate", row.tracestate))
    return [(name, value.encode()) for name, value in pairs if value]


async def _send(producer: AIOKafkaProducer, row: Row[Any], partition: int | None) -> Any:
    """Queues the row's record. It carries the trace context its row was written in, so
    the consumer's work continues that trace (the batch's span: tracing.publish_span)."""
    headers = [
        ("event-id", row.effect_id.encode()),
        ("event-type", row.event_type.encode()),
        ("dispatch-generation", str(row.dispatch_generation).encode()),
        *_trace_headers(row),
    ]
    return await producer.send(
        row.topic, value=row.payload, key=row.key.encode(), partition=partition, headers=headers
    )


async def _outcome_of(delivery: asyncio.Future[Any]) -> Any:
    """The broker's answer or the error. Awaited one by one: they resolve together, and
    gather() would wrap each of a thousand futures first."""
    try:
        return await delivery
    except asyncio.CancelledError as error:
        if delivery.cancelled():  # the producer gave the message up; the relay goes on
            return error
        raise  # the relay itself is being stopped
    except Exception as error:
        return error


def _failed(error: BaseException) -> asyncio.Future[Any]:
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    future.set_exception(error)
    return future
