"""The inbox applies each event once, whatever the broker redelivers."""

from __future__ import annotations

import asyncio
import uuid

from google.protobuf.wrappers_pb2 import StringValue
from sqlalchemy import select

from servicekit import envelope, kafka
from servicekit.inbox import Delivery, Inbox
from tests.foundation.conftest import Pair
from tests.foundation.harness import applying_handler, eventually, start_consumer


def _envelope_bytes(note: str, aggregate_id: str) -> bytes:
    event = envelope.wrap(StringValue(value=note), aggregate_id, "test", {}, uuid.uuid4())
    return event.SerializeToString()


async def test_the_same_kafka_message_delivered_ten_times_changes_nothing_after_the_first(
    pair: Pair,
) -> None:
    aggregate = str(uuid.uuid4())
    message = _envelope_bytes("once", aggregate)
    producer = kafka.make_producer(pair.bootstrap, "ten-times")
    await producer.start()
    for _ in range(10):
        await producer.send_and_wait(pair.topic, message, key=aggregate.encode())
    await producer.stop()
    consumer = await start_consumer(pair.consumer, pair.bootstrap, pair.topic, "g-" + aggregate)

    async def all_ten_seen() -> bool:
        committed = 0
        for partition in consumer.kafka_consumer.assignment():
            committed += await consumer.kafka_consumer.committed(partition) or 0
        return committed >= 10

    await eventually(all_ten_seen)
    await consumer.stop()
    assert await pair.consumer.applied_count(aggregate) == 1


async def test_concurrent_deliveries_of_one_event_apply_it_once(pair: Pair) -> None:
    aggregate = str(uuid.uuid4())
    delivery = Delivery(
        pair.topic, 0, 0, _envelope_bytes("race", aggregate), key=aggregate.encode()
    )
    inboxes = [
        Inbox(
            "racers",
            pair.consumer.sessions,
            pair.consumer.tables.inbox,
            {StringValue.DESCRIPTOR.full_name: applying_handler(pair.consumer)},
        )
        for _ in range(8)
    ]
    outcomes = await asyncio.gather(*(inbox.deliver(delivery) for inbox in inboxes))
    assert sorted(outcomes).count("processed") == 1
    assert set(outcomes) == {"processed", "duplicate"}
    assert await pair.consumer.applied_count(aggregate) == 1


async def test_another_integrity_error_is_an_error_not_a_duplicate(pair: Pair) -> None:
    aggregate = str(uuid.uuid4())

    async def violates_another_key(session, event, payload) -> None:  # type: ignore[no-untyped-def]
        # Inserting the same switch twice breaks switches' primary key, not the inbox's.
        for _ in range(2):
            await session.execute(pair.consumer.switches.insert().values(name=aggregate))

    inbox = Inbox(
        "strict",
        pair.consumer.sessions,
        pair.consumer.tables.inbox,
        {StringValue.DESCRIPTOR.full_name: violates_another_key},
    )
    from servicekit.retry import RetryPolicy

    inbox._policy = RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.01)
    delivery = Delivery(pair.topic, 0, 0, _envelope_bytes("x", aggregate), key=aggregate.encode())
    outcome = await inbox.deliver(delivery)
    assert outcome == "parked"
    async with pair.consumer.sessions() as session:
        state = (
            await session.execute(
                select(pair.consumer.tables.inbox.c.state).where(
                    pair.consumer.tables.inbox.c.consumer == "strict"
                )
            )
        ).scalar_one()
    assert state == "failed"
