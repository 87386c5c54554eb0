"""The outbox relay publishes every committed row, at least once, and never loses one."""

from __future__ import annotations

import asyncio
import collections
import uuid
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import NotLeaderForPartitionError, RequestTimedOutError
from google.protobuf.wrappers_pb2 import StringValue
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import select, text

from servicekit.kafka import ProducerLink
from servicekit.kafka_access import client_security
from servicekit.outbox import Outbox
from servicekit.relay import OutboxRelay
from servicekit.retry import RetryPolicy
from tests.foundation.conftest import Pair
from tests.foundation.harness import append_events, eventually, start_consumer, start_relay


async def _read_event_ids(bootstrap: str, topic: str, expected: int) -> list[str]:
    """Every event id on the topic, duplicates included, once `expected` have arrived."""
    records = await _read_records(bootstrap, topic, expected)
    return [dict(r.headers)["event-id"].decode() for r in records]


async def _read_records(bootstrap: str, topic: str, expected: int) -> list[Any]:
    """Every record on the topic, duplicates included, once `expected` have arrived."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        group_id=f"reader-{uuid.uuid4().hex[:6]}",
        enable_auto_commit=False,
        **client_security(),
    )
    await consumer.start()
    found: list[Any] = []
    try:
        deadline = asyncio.get_running_loop().time() + 60
        while len(found) < expected and asyncio.get_running_loop().time() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                found += records
        # Anything extra (a duplicate) would arrive right behind; give it a moment.
        for records in (await consumer.getmany(timeout_ms=1000)).values():
            found += records
    finally:
        await consumer.stop()
    return found


async def test_two_relays_at_once_never_publish_a_row_twice_and_lose_nothing(pair: Pair) -> None:
    ids = await append_events(pair.producer, pair.topic, [f"n{i}" for i in range(1500)])
    relays = [await start_relay(pair.producer, pair.bootstrap, batch_size=50) for _ in range(2)]

    async def drained() -> bool:
        return (await pair.producer.outbox_states())["pending"] == 0

    await eventually(drained, 60)
    for relay in relays:
        await relay.stop()
    published = await _read_event_ids(pair.bootstrap, pair.topic, len(ids))
    counts = collections.Counter(published)
    assert set(counts) == {str(i) for i in ids}
    assert max(counts.values()) == 1


async def test_a_row_that_commits_after_a_later_row_was_published_is_still_published(
    pair: Pair,
) -> None:
    outbox = Outbox(pair.producer.tables.outbox, "late")
    relay = await start_relay(pair.producer, pair.bootstrap)
    async with pair.producer.sessions() as slow_session:
        await slow_session.begin()
        # The slow transaction takes its sequence number first, then commits last.
        late_id = await outbox.append(slow_session, pair.topic, "agg", StringValue(value="late"))
        [early_id] = await append_events(pair.producer, pair.topic, ["early"])

        async def early_dispatched() -> bool:
            return await _state(pair, early_id) == "dispatched"

        await eventually(early_dispatched)
        await slow_session.commit()

    async def late_dispatched() -> bool:
        return await _state(pair, late_id) == "dispatched"

    await eventually(late_dispatched)
    await relay.stop()
    assert str(late_id) in await _read_event_ids(pair.bootstrap, pair.topic, 2)


async def test_a_row_the_broker_refuses_is_retried_then_marked_failed_not_retried_forever(
    pair: Pair,
) -> None:
    # Larger than the producer's max request size: refused by Kafka every time.
    [huge] = await append_events(pair.producer, pair.topic, ["x" * 2_000_000])
    [fine] = await append_events(pair.producer, pair.topic, ["fine"])
    relay = await start_relay(
        pair.producer, pair.bootstrap, policy=RetryPolicy(max_attempts=3, base_delay_s=0.05)
    )

    async def huge_failed() -> bool:
        return await _state(pair, huge) == "failed"

    await eventually(huge_failed)
    await relay.stop()
    assert await _state(pair, fine) == "dispatched"
    async with pair.producer.sessions() as session:
        row = (
            await session.execute(
                select(pair.producer.tables.outbox).where(
                    pair.producer.tables.outbox.c.effect_id == huge
                )
            )
        ).one()
    assert row.attempts == 3
    assert "MessageSizeTooLarge" in (row.last_error or "")


async def test_a_poison_message_is_parked_later_ones_flow_and_a_replay_delivers_it_once(
    pair: Pair,
) -> None:
    aggregate = str(uuid.uuid4())  # one key: every message on the same partition
    notes = ["before", "poison", "after-1", "after-2"]
    ids = await append_events(pair.producer, pair.topic, notes, aggregate_id=aggregate)
    relay = await start_relay(pair.producer, pair.bootstrap)
    consumer = await start_consumer(pair.consumer, pair.bootstrap, pair.topic, "g-" + aggregate)

    async def three_applied() -> bool:
        return await pair.consumer.applied_count(aggregate) == 3

    await eventually(three_applied)
    assert await _inbox_state(pair, ids[1]) == "failed"
    assert await _dead_letter_count(pair, ids[1]) == 1

    async with pair.consumer.sessions() as session, session.begin():
        await session.execute(pair.consumer.switches.insert().values(name="poison-fixed"))
    async with pair.producer.sessions() as session, session.begin():
        generation = await Outbox(pair.producer.tables.outbox, "x").replay(session, ids[1])
    assert generation == 1

    async def four_applied() -> bool:
        return await pair.consumer.applied_count(aggregate) == 4

    await eventually(four_applied)
    await asyncio.sleep(1)  # a second application would land here
    await relay.stop()
    await consumer.stop()
    assert await pair.consumer.applied_count(aggregate) == 4
    assert await _inbox_state(pair, ids[1]) == "processed"


async def _state(pair: Pair, effect_id: uuid.UUID) -> str:
    t = pair.producer.tables.outbox
    return str(await pair.producer.scalar(select(t.c.state).where(t.c.effect_id == effect_id)))


async def _inbox_state(pair: Pair, event_id: uuid.UUID) -> str:
    t = pair.consumer.tables.inbox
    return str(await pair.consumer.scalar(select(t.c.state).where(t.c.event_id == str(event_id))))


async def _dead_letter_count(pair: Pair, event_id: uuid.UUID) -> int:
    ids = await _read_event_ids(pair.bootstrap, pair.topic + ".dlq", 1)
    return ids.count(str(event_id))


class _LeaderMovingProducer(AIOKafkaProducer):  # type: ignore[misc]
    """The real producer, but the broker's leader 'moves' under the first sends."""

    def __init__(self, failures: int, **config: Any) -> None:
        super().__init__(**config)
        self.failures_left = failures

    async def send(self, *args: Any, **kwargs: Any) -> asyncio.Future[Any]:
        if self.failures_left > 0:
            self.failures_left -= 1
            moved: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            error = NotLeaderForPartitionError if self.failures_left % 2 else RequestTimedOutError
            moved.set_exception(error())
            return moved
        sent: asyncio.Future[Any] = await super().send(*args, **kwargs)
        return sent


async def test_leader_moves_and_request_timeouts_spend_no_attempt_of_a_row(pair: Pair) -> None:
    [event_id] = await append_events(pair.producer, pair.topic, ["through a leader election"])
    producer = _LeaderMovingProducer(
        failures=6, bootstrap_servers=pair.bootstrap, **client_security()
    )
    await producer.start()
    relay = OutboxRelay(
        pair.producer.sessions,
        pair.producer.tables.outbox,
        ProducerLink.of(producer),
        policy=RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.05),
        idle_wait_s=0.01,
        partial_wait_s=0.01,
    )
    stopping = asyncio.Event()
    running = asyncio.create_task(relay.run(stopping))
    try:

        async def dispatched() -> bool:
            return await _state(pair, event_id) == "dispatched"

        await eventually(dispatched)
    finally:
        stopping.set()
        await running
        await producer.stop()
    assert producer.failures_left == 0
    async with pair.producer.sessions() as session:
        t = pair.producer.tables.outbox.c
        attempts = (
            await session.execute(select(t.attempts).where(t.effect_id == event_id))
        ).scalar_one()
    assert attempts == 1  # the one that went through; six retriable failures cost nothing


async def test_a_relayed_record_continues_the_trace_its_row_was_written_in_with_one_header(
    pair: Pair, span_exporter: InMemorySpanExporter
) -> None:
    """The record carries its row's own context, one traceparent, so a consumer continues
    the change that wrote the row; the batch's publish span (servicekit.tracing.
    publish_span), a trace of its own, links to it."""
    with trace.get_tracer("tests").start_as_current_span("the change") as change:
        await append_events(pair.producer, pair.topic, ["traced"])
    relay = await start_relay(pair.producer, pair.bootstrap)
    [record] = await _read_records(pair.bootstrap, pair.topic, 1)
    await relay.stop()
    headers = [value.decode() for name, value in record.headers if name == "traceparent"]
    assert len(headers) == 1, record.headers
    _, trace_id, parent_id, _ = headers[0].split("-")
    assert int(trace_id, 16) == change.get_span_context().trace_id
    assert int(parent_id, 16) == change.get_span_context().span_id
    [published] = [
        s for s in span_exporter.get_finished_spans() if s.name == f"{pair.topic} publish"
    ]
    assert published.parent is None
    linked = [link.context.span_id for link in published.links]
    assert linked == [change.get_span_context().span_id]
    assert (published.attributes or {})["messaging.batch.message_count"] == 1


async def _lease_holder(pair: Pair) -> int | None:
    """The backend holding the relay's lease (servicekit.leadership), if any."""
    async with pair.producer.sessions() as session:
        query = text(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        return (await session.execute(query)).scalar_one_or_none()


async def test_one_relay_publishes_at_a_time_and_another_takes_over_when_it_stops(
    pair: Pair,
) -> None:
    first = await start_relay(pair.producer, pair.bootstrap)

    async def first_leads() -> bool:
        return first.relay.lease.held

    await eventually(first_leads)
    second = await start_relay(pair.producer, pair.bootstrap)

    async def second_waits() -> bool:  # it asked for the lease and did not get it
        return second.relay.lease.asked > 0

    await eventually(second_waits)
    [early] = await append_events(pair.producer, pair.topic, ["while the first leads"])
    await _read_records(pair.bootstrap, pair.topic, 1)
    assert first.relay.lease.held and not second.relay.lease.held
    await first.stop()

    async def second_leads() -> bool:
        return second.relay.lease.held

    await eventually(second_leads)
    [late] = await append_events(pair.producer, pair.topic, ["after the first stopped"])
    published = await _read_event_ids(pair.bootstrap, pair.topic, 2)
    await second.stop()
    assert sorted(published) == sorted([str(early), str(late)])


async def test_a_relay_whose_lease_connection_is_cut_leads_again_and_publishes(
    pair: Pair,
) -> None:
    relay = await start_relay(pair.producer, pair.bootstrap)

    async def holder_known() -> bool:
        return await _lease_holder(pair) is not None

    await eventually(holder_known)
    cut = await _lease_holder(pair)
    async with pair.producer.sessions() as session:
        await session.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": cut})

    async def leads_on_another_connection() -> bool:
        holder = await _lease_holder(pair)
        return holder is not None and holder != cut and relay.relay.lease.held

    await eventually(leads_on_another_connection)
    [after] = await append_events(pair.producer, pair.topic, ["after the cut"])
    published = await _read_event_ids(pair.bootstrap, pair.topic, 1)
    await relay.stop()
    assert published == [str(after)]
