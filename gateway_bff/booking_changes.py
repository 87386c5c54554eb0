"""Hears that a booking changed, from the services' events, and makes the gateway forget
what it kept of it (gateway_bff.booking_cache, decision 0008).

Every event about a booking is keyed by the booking's id (decision 0005), so the key is
all that is read: values and headers are never parsed here, and a key that is not a
booking's id forgets nothing. The listener reads from the end of each topic with no
consumer group (it commits nothing, and the broker lets the gateway read these topics and
nothing more: deploy/boundary.yaml's `follows`), in fetches the broker holds for up to
0.2 s, so a change is heard within that of its event. Whatever it misses while it is away
(a broker outage, a restart) is covered twice: it forgets everything when it attaches
again, and nothing is kept longer than the cache's time to live anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRecord
from aiokafka.errors import KafkaError
from prometheus_client import Counter

from gateway_bff.booking_cache import BookingCache
from servicekit.outage import OutageLog
from servicekit.supervision import pause
from servicekit.validation import is_canonical_uuid

log = logging.getLogger(__name__)
TOPICS = ("booking.events", "payment.events", "access.events")
RECONNECT_WAIT_S = 1.0
# The broker holds each fetch until it has HEARD_WITHIN_MS of changes (or a mebibyte):
# with aiokafka's defaults it answered as soon as one record came, so every change cost a
# fetch, whose request and answer for the nine partitions are some 0.75 ms of Python here
# whether they carry a record or none (docs/performance.md, "The gateway"). A change is
# heard at most this much later than its event reached the broker; idle, five fetches a
# second where the defaults made two.
HEARD_WITHIN_MS = 200
HEARD = Counter(
    "liftfit_gateway_booking_changes_total",
    "Records the gateway's booking cache heard, by what they did: forgot a booking, or "
    "were ignored (a key that names no booking)",
    ["outcome"],
)
ConsumerFactory = Callable[[], AIOKafkaConsumer]


def consumer_factory(bootstrap: str, prefix: str, security: dict[str, Any]) -> ConsumerFactory:
    def make() -> AIOKafkaConsumer:
        return AIOKafkaConsumer(
            *(prefix + topic for topic in TOPICS),
            bootstrap_servers=bootstrap,
            client_id="gateway-booking-changes",
            group_id=None,  # every partition, from its end; no offsets kept
            enable_auto_commit=False,
            auto_offset_reset="latest",
            fetch_max_wait_ms=HEARD_WITHIN_MS,
            fetch_min_bytes=1024 * 1024,
            **security,
        )

    return make


class BookingChanges:
    def __init__(self, make_consumer: ConsumerFactory, cache: BookingCache) -> None:
        self._make_consumer = make_consumer
        self._cache = cache
        self._broker = OutageLog(log, "the booking cache's listener: the broker")

    async def run(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            consumer = self._make_consumer()
            try:
                await consumer.start()
                await self._listen(consumer, stopping)
            except KafkaError as error:
                self._broker.failed(error)
            except Exception:  # it must not die: a dead listener would leave only the TTL
                log.exception("the booking cache's listener failed; attaching again")
            finally:
                with contextlib.suppress(Exception):
                    await consumer.stop()
            await pause(stopping, RECONNECT_WAIT_S)

    async def _listen(self, consumer: AIOKafkaConsumer, stopping: asyncio.Event) -> None:
        if not await _positioned(consumer, stopping):
            return
        self._cache.forget_all()  # what changed before it was positioned went unheard
        self._broker.succeeded()
        while not stopping.is_set():
            batches = await consumer.getmany(timeout_ms=500, max_records=1000)
            for records in batches.values():
                self.hear(records)

    def hear(self, records: Iterable[ConsumerRecord[Any, Any]]) -> None:
        for record in records:
            booking_id = _booking_id(record.key)
            if booking_id is None:
                HEARD.labels("ignored").inc()
                continue
            self._cache.forget(booking_id)
            HEARD.labels("forgot").inc()


async def _positioned(consumer: AIOKafkaConsumer, stopping: asyncio.Event) -> bool:
    """Waits until every assigned partition has its position (the end, when it attached):
    a change after this is heard. Without a group, the assignment is every partition of
    the topics, known once their metadata is."""
    while not consumer.assignment():
        if stopping.is_set():
            return False
        await asyncio.sleep(0.05)
    for partition in consumer.assignment():
        await consumer.position(partition)
    return True


def _booking_id(key: object) -> str | None:
    if not isinstance(key, bytes) or len(key) != 36:
        return None
    try:
        text = key.decode("ascii")
    except UnicodeDecodeError:
        return None
    return text if is_canonical_uuid(text) else None
