"""Kafka clients as every service configures them, and the service's one producer.

Nothing here connects at construction. The producer is started by whichever worker needs
it first and retried while the broker is down, so a service starts and serves without
Kafka and its relay catches up when the broker returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaError

from servicekit.outage import OutageLog
from servicekit.supervision import pause

log = logging.getLogger(__name__)
ProducerFactory = Callable[[], AIOKafkaProducer]
RECONNECT_WAIT_S = 1.0


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
    )


class ProducerLink:
    """One producer per process, shared by the relay and the dead-letter copies."""

    def __init__(self, make: ProducerFactory, name: str = "producer") -> None:
        self._make = make
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

    async def close(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            await producer.stop()


async def broker_answers(producer: AIOKafkaProducer, timeout_s: float = 3.0) -> bool:
    try:
        await asyncio.wait_for(producer.client.fetch_all_metadata(), timeout_s)
        return True
    except Exception:
        return False
