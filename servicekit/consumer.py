"""Feeding one consumer group's Kafka records to an Inbox.

Offsets are committed after the inbox's database commit, so a crash redelivers rather
than loses. They are committed once a poll finds nothing new, and at most every
COMMIT_EVERY_S while records keep coming, not after every poll: the inbox drops what a
crash or a rebalance redelivers, and each commit is a round trip to the group's
coordinator and a record in the broker's offsets log (docs/performance.md).

The Kafka consumer is created and started inside the worker, not before it: a service
starts and serves while the broker is down, and its consumers join as soon as the broker
returns. A broker outage is logged when it starts, as a bounded reminder and when it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.errors import CommitFailedError, KafkaError

from servicekit.inbox import Inbox
from servicekit.outage import OutageLog
from servicekit.records import Delivery
from servicekit.supervision import pause

log = logging.getLogger(__name__)
ConsumerFactory = Callable[[], AIOKafkaConsumer]
RECONNECT_WAIT_S = 1.0
# Under load, how long delivered records may wait for their offsets' commit: what a crash
# or a rebalance in that time redelivers, the inbox drops as duplicates.
COMMIT_EVERY_S = 1.0
COMMIT_ON_STOP_S = 2.0


class InboxConsumer:
    """One consumer group's loop: poll, deliver each record, commit."""

    def __init__(self, make_consumer: ConsumerFactory, inbox: Inbox, name: str = "") -> None:
        self._make_consumer = make_consumer
        self._inbox = inbox
        self.name = name or f"{inbox.name} consumer"
        self.kafka_consumer: AIOKafkaConsumer | None = None
        self._broker = OutageLog(log, f"{self.name}: the broker")
        self._delivered: dict[TopicPartition, int] = {}  # the next offset, not yet committed
        self._committed_at = time.monotonic()

    async def run(self, stopping: asyncio.Event) -> None:
        consumer = await self._connect(stopping)
        if consumer is None:
            return
        try:
            while not stopping.is_set():
                await self._poll_once(consumer)
        finally:
            self.kafka_consumer = None
            with contextlib.suppress(Exception):  # a broker gone by now keeps them uncommitted
                async with asyncio.timeout(COMMIT_ON_STOP_S):
                    await self._commit(consumer)
            with contextlib.suppress(Exception):
                await consumer.stop()

    async def _connect(self, stopping: asyncio.Event) -> AIOKafkaConsumer | None:
        while not stopping.is_set():
            consumer = self._make_consumer()
            try:
                started = await _unless_stopping(consumer.start(), stopping)
            except KafkaError as error:
                self._broker.failed(error)
                with contextlib.suppress(Exception):
                    await consumer.stop()
                await pause(stopping, RECONNECT_WAIT_S)
                continue
            if not started:  # stopping while the start waited on the broker or its topics
                with contextlib.suppress(Exception):
                    await consumer.stop()
                return None
            self._broker.succeeded()
            self.kafka_consumer = consumer
            return consumer
        return None

    async def _poll_once(self, consumer: AIOKafkaConsumer) -> None:
        try:
            batches = await consumer.getmany(timeout_ms=200, max_records=500)
        except KafkaError as error:
            self._broker.failed(error)
            await asyncio.sleep(RECONNECT_WAIT_S)
            return
        for partition, records in batches.items():
            await self._deliver_partition(partition, records)
        if not batches or time.monotonic() - self._committed_at >= COMMIT_EVERY_S:
            await self._commit(consumer)

    async def _deliver_partition(
        self, partition: TopicPartition, records: list[ConsumerRecord[Any, Any]]
    ) -> None:
        for record in records:
            await self._inbox.deliver(Delivery.of(record))
            self._delivered[partition] = record.offset + 1

    async def _commit(self, consumer: AIOKafkaConsumer) -> None:
        """Commits the delivered records' offsets of the partitions still assigned; a
        partition lost to a rebalance is redelivered to its new owner from its last commit."""
        self._committed_at = time.monotonic()
        assigned = consumer.assignment()
        offsets = {tp: offset for tp, offset in self._delivered.items() if tp in assigned}
        self._delivered.clear()
        if not offsets:
            return
        try:
            await consumer.commit(offsets)
            self._broker.succeeded()
        except CommitFailedError as error:
            # The group rebalanced: another member (or this one, later) gets the partition
            # from the last committed offset, and the inbox drops what was applied.
            log.warning("%s: offsets of %s not committed: %s", self.name, sorted(offsets), error)
        except KafkaError as error:
            self._broker.failed(error)
            for partition, offset in offsets.items():  # tried again with the next commit
                self._delivered.setdefault(partition, offset)


async def _unless_stopping(start: Coroutine[Any, Any, None], stopping: asyncio.Event) -> bool:
    """Runs `start` unless the service stops first (then cancels it): a consumer's start
    waits for its topics' metadata, up to the request time-out, and a stop must not."""
    starting = asyncio.ensure_future(start)
    stop = asyncio.ensure_future(stopping.wait())
    try:
        await asyncio.wait({starting, stop}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        starting.cancel()  # the worker itself was cancelled
        raise
    finally:
        stop.cancel()
    if starting.done():
        starting.result()  # raises what the start raised
        return True
    starting.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await starting
    return False
