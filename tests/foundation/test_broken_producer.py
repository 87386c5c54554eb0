"""A producer whose idempotent state the broker refuses is replaced; no row pays for it.

After a broker restart aiokafka's idempotent producer can be left with a gap in its
sequence numbers: a batch that was numbered and then given up. The broker then answers
every later batch on that partition with OutOfOrderSequenceNumber, for good. These tests
put a real producer on the real broker into that state (tests/support/broken_producer.py)
and check that the relay and the dead-letter copies hand it back, go on with a new
producer, and spend no attempt of any row. Each service's own relay has the same test in
its suite.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

import pytest
from aiokafka import AIOKafkaProducer
from sqlalchemy import select

from servicekit import kafka
from servicekit.kafka_access import client_security
from servicekit.relay import OutboxRelay
from servicekit.retry import RetryPolicy
from tests.foundation.conftest import Pair
from tests.foundation.harness import append_events, eventually, start_consumer, start_relay
from tests.foundation.test_relay import _read_event_ids
from tests.support.broken_producer import GappedProducer


class Producers:
    """A link's factory: a gapped producer first, then good ones; remembers each."""

    def __init__(self, bootstrap: str, gapped_topic: str) -> None:
        self._bootstrap = bootstrap
        self._topic = gapped_topic
        self.made: list[AIOKafkaProducer] = []

    def __call__(self) -> AIOKafkaProducer:
        config = {
            "enable_idempotence": True,
            "acks": "all",
            "bootstrap_servers": self._bootstrap,
            **client_security(),
        }
        producer = (
            GappedProducer(self._topic, **config)
            if not self.made
            else kafka.make_producer(self._bootstrap, f"good-{len(self.made)}")
        )
        self.made.append(producer)
        return producer


async def test_rows_a_refused_producer_could_not_send_go_out_on_a_new_one_spending_no_attempt(
    pair: Pair, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="servicekit.kafka")
    ids = await append_events(pair.producer, pair.topic, [f"n{i}" for i in range(30)])
    producers = Producers(pair.bootstrap, pair.topic)
    link = kafka.ProducerLink(producers, "gapped")
    relay = OutboxRelay(
        pair.producer.sessions,
        pair.producer.tables.outbox,
        link,
        # Two attempts: a relay that blamed the rows would mark them failed at once.
        policy=RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.05),
        idle_wait_s=0.01,
        partial_wait_s=0.01,
    )
    stopping = asyncio.Event()
    running = asyncio.create_task(relay.run(stopping))
    try:

        async def settled() -> bool:  # every row dispatched, or one failed
            states = await pair.producer.outbox_states()
            return states.get("pending", 0) == 0 or states.get("failed", 0) > 0

        await eventually(settled, 60)
    finally:
        stopping.set()
        await asyncio.wait_for(running, 30)
        await link.close()

    states = await pair.producer.outbox_states()
    assert (states["dispatched"], states["pending"], states["failed"]) == (len(ids), 0, 0)
    outbox = pair.producer.tables.outbox.c
    attempts = await pair.producer.scalar(select(outbox.attempts).distinct())
    assert attempts == 1  # the one that went through
    assert len(producers.made) == 2
    assert any("producer replaced" in r.getMessage() for r in caplog.records), caplog.text
    published = await _read_event_ids(pair.bootstrap, pair.topic, len(ids) + 3)
    assert {str(i) for i in ids} <= set(published)


async def test_a_dead_letter_copy_sent_through_a_refused_producer_goes_out_on_a_new_one(
    pair: Pair, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="servicekit.kafka")
    aggregate = str(uuid.uuid4())
    producers = Producers(pair.bootstrap, pair.topic + ".dlq")
    link = kafka.ProducerLink(producers, "gapped dead letters")
    assert await link.connect_within(30) is not None  # the gapped one, as a relay would
    [poison] = await append_events(pair.producer, pair.topic, ["poison"], aggregate_id=aggregate)
    relay = await start_relay(pair.producer, pair.bootstrap)
    consumer = await start_consumer(
        pair.consumer, pair.bootstrap, pair.topic, "g-" + aggregate, dead_letters=link
    )
    try:

        async def parked() -> bool:  # the inbox row is written when the record arrives
            inbox = pair.consumer.tables.inbox.c
            async with pair.consumer.sessions() as session:
                state = await session.scalar(
                    select(inbox.state).where(inbox.event_id == str(poison))
                )
            return state == "failed"

        await eventually(parked)
        copies = await _read_event_ids(pair.bootstrap, pair.topic + ".dlq", 2)
    finally:
        await consumer.stop()
        await relay.stop()
    assert copies.count(str(poison)) >= 1, copies
    assert len(producers.made) == 2
    assert any("producer replaced" in r.getMessage() for r in caplog.records), caplog.text
