"""Kafka clients as every service configures them, and the service's one producer.

Nothing here connects at construction. The producer is started by whichever worker needs
it first and retried while the broker is down, so a service starts and serves without
Kafka and its relay catches up when the broker returns.

A producer whose idempotent state the broker no longer accepts is broken for good (see
`PRODUCER_STATE_ERRORS`): its users hand it back with `ProducerLink.replace`, and the
next `connect` starts a new one, with a new producer id and sequences from zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import errors as kafka_errors
from aiokafka.errors import KafkaError

from servicekit.kafka_access import client_security
from servicekit.metrics.counters import PRODUCER_REPLACEMENTS
from servicekit.outage import OutageLog, short_error
from servicekit.supervision import pause

log = logging.getLogger(__name__)
ProducerFactory = Callable[[], AIOKafkaProducer]
RECONNECT_WAIT_S = 1.0
# A broken producer's records were already given up; closing it must not wait for them.
DISCARD_WAIT_S = 5.0

# What the broker answers when the idempotent producer's own state, not the record, is
# wrong. Kafka numbers every record of a producer id and epoch per partition and accepts
# only the next number. aiokafka gives a sequence number to a batch when it first sends
# it; a batch that is then given up (its partition had no leader until it expired, as
# while a broker shuts down) leaves a gap, and the broker answers every later batch on
# that partition with OUT_OF_ORDER_SEQUENCE_NUMBER (45). UNKNOWN_PRODUCER_ID (59) and
# INVALID_PRODUCER_ID_MAPPING (49) say the broker has forgotten the producer id;
# INVALID_PRODUCER_EPOCH (47, which aiokafka raises as ProducerFenced) and
# INVALID_TXN_STATE (48) that its epoch is no longer valid. Java's producer recovers by
# bumping its epoch; aiokafka's never does (aio-libs/aiokafka#1017), so the same producer
# keeps failing until it is replaced. DUPLICATE_SEQUENCE_NUMBER (46) is not here: aiokafka
# counts it as delivered. A closed producer is as unusable.
PRODUCER_STATE_ERRORS: tuple[type[BaseException], ...] = (
    kafka_errors.OutOfOrderSequenceNumber,
    kafka_errors.UnknownProducerId,
    kafka_errors.InvalidProducerIdMapping,
    kafka_errors.InvalidProducerEpoch,
    kafka_errors.ProducerFenced,
    kafka_errors.InvalidTxnState,
    kafka_errors.ProducerClosed,
)


def producer_broken(producer: AIOKafkaProducer, error: BaseException) -> bool:
    """Whether `error` says that `producer` itself can send nothing more.

    Besides the producer-state errors: once aiokafka's sender task has died, every send
    raises the error it died of, whatever that was, so a dead sender breaks the producer.
    """
    return isinstance(error, PRODUCER_STATE_ERRORS) or _sender_died(producer)


def _sender_died(producer: AIOKafkaProducer) -> bool:
    # aiokafka keeps its sender task private; a producer without one is not started yet.
    task = getattr(getattr(producer, "_sender", None), "sender_task", None)
    return isinstance(task, asyncio.Task) and task.done()


def make_producer(bootstrap: str, client_id: str) -> AIOKafkaProducer:
    # The idempotent producer with acks=all: a broker-side retry never writes a message twice,
    # and an acknowledgement means every in-sync replica has it.
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        client_id=client_id,
        enable_idempotence=True,
        acks="all",
        linger_ms=5,
        max_batch_size=256 * 1024,
        request_timeout_ms=15000,
        **client_security(),
    )


def make_consumer(bootstrap: str, group_id: str, topics: list[str]) -> AIOKafkaConsumer:
    # Offsets are committed by the inbox only after the database commit.
    return AIOKafkaConsumer(
        *topics,
        bootstrap_servers=bootstrap,
        group_id=group_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        max_poll_records=500,
        # The broker's smallest session: after a SIGKILL the group hands the dead member's
        # partitions to the restarted one within 6 s instead of 10.
        session_timeout_ms=6000,
        heartbeat_interval_ms=2000,
        **client_security(),
    )


class ProducerLink:
    """One producer per process, shared by the relay and the dead-letter copies."""

    def __init__(self, make: ProducerFactory, name: str = "producer") -> None:
        self._make = make
        self._name = name
        self._producer: AIOKafkaProducer | None = None
        self._lock = asyncio.Lock()
        self._broker = OutageLog(log, f"{name}: the broker")

    @classmethod
    def of(cls, producer: AIOKafkaProducer) -> ProducerLink:
        """A link to a producer the caller has started (tests, tools)."""
        link = cls(lambda: producer)
        link._producer = producer
        return link

    @property
    def current(self) -> AIOKafkaProducer | None:
        return self._producer

    async def connect(self, stopping: asyncio.Event) -> AIOKafkaProducer | None:
        """The started producer; waits while the broker is down; None once stopping."""
        async with self._lock:
            while self._producer is None and not stopping.is_set():
                candidate = self._make()
                try:
                    await candidate.start()
                except KafkaError as error:
                    self._broker.failed(error)
                    with contextlib.suppress(Exception):
                        await candidate.stop()
                    await pause(stopping, RECONNECT_WAIT_S)
                    continue
                self._broker.succeeded()
                self._producer = candidate
            return self._producer

    async def connect_within(self, seconds: float) -> AIOKafkaProducer | None:
        """The started producer, or None if the broker did not answer within about
        `seconds` (a try under way is let finish rather than cut)."""
        gave_up = asyncio.Event()
        timer = asyncio.get_running_loop().call_later(seconds, gave_up.set)
        try:
            return await self.connect(gave_up)
        finally:
            timer.cancel()

    async def replace(self, broken: AIOKafkaProducer, error: BaseException) -> None:
        """Drops `broken` if it is still the current producer; the next `connect` starts
        a new one. Every user of a broken producer calls this, and only the first call
        acts. What the broken one had not delivered is its users' to send again."""
        async with self._lock:
            if self._producer is not broken:
                return
            self._producer = None
        PRODUCER_REPLACEMENTS.labels(type(error).__name__).inc()
        log.warning(
            "%s: producer replaced: the broker refused its state (%s); what it had not"
            " delivered goes out on a new producer",
            self._name,
            short_error(error),
        )
        await _discard(broken)

    async def close(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            await producer.stop()


async def _discard(producer: AIOKafkaProducer) -> None:
    """Closes a broken producer without waiting on records it will never deliver."""
    try:
        await asyncio.wait_for(producer.stop(), DISCARD_WAIT_S)
    except Exception as error:  # its connections are closed below either way
        log.info("a replaced producer closed uncleanly: %s", short_error(error))
        sender = getattr(producer, "_sender", None)  # private: stop() could not end it
        with contextlib.suppress(Exception):
            if sender is not None:
                await sender.close()
            await producer.client.close()


async def broker_answers(producer: AIOKafkaProducer, timeout_s: float = 3.0) -> bool:
    try:
        await asyncio.wait_for(producer.client.fetch_all_metadata(), timeout_s)
        return True
    except Exception:
        return False
