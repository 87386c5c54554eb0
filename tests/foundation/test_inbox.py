"""The inbox applies each event once, whatever the broker redelivers."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from google.protobuf.message import Message
from google.protobuf.wrappers_pb2 import Int64Value, StringValue
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from sqlalchemy import event, func, select, text

from servicekit import consumer as consumer_module
from servicekit import envelope, kafka
from servicekit.inbox import Delivery, Inbox
from servicekit.retry import RetryPolicy
from tests.foundation.conftest import Pair
from tests.foundation.harness import applying_handler, eventually, start_consumer, switch_class


def _envelope_bytes(note: str, aggregate_id: str) -> bytes:
    return _bytes_of(StringValue(value=note), aggregate_id)


def _bytes_of(message: Message, aggregate_id: str) -> bytes:
    wrapped = envelope.wrap(message, aggregate_id, "test", {}, uuid.uuid4())
    return wrapped.SerializeToString()


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


async def test_offsets_are_committed_when_the_records_stop_not_after_each_poll(
    pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each poll takes one record, so committing after every poll would commit twelve times.
    monkeypatch.setattr(consumer_module, "COMMIT_EVERY_S", 60.0)
    aggregate = str(uuid.uuid4())
    producer = kafka.make_producer(pair.bootstrap, "one-at-a-time")
    await producer.start()
    for n in range(12):
        message = _envelope_bytes(f"record {n}", aggregate)
        await producer.send_and_wait(pair.topic, message, key=aggregate.encode())
    await producer.stop()
    commits: list[dict[TopicPartition, int]] = []

    def one_record_a_poll(made: AIOKafkaConsumer) -> None:
        getmany, commit = made.getmany, made.commit

        async def take_one(*partitions: TopicPartition, timeout_ms: int = 0, **_: Any) -> Any:
            return await getmany(*partitions, timeout_ms=timeout_ms, max_records=1)

        async def counted(offsets: dict[TopicPartition, int]) -> None:
            commits.append(dict(offsets))
            await commit(offsets)

        made.getmany, made.commit = take_one, counted

    consumer = await start_consumer(
        pair.consumer, pair.bootstrap, pair.topic, "g-" + aggregate, watch=one_record_a_poll
    )

    async def all_twelve_committed() -> bool:
        return sum(commits[-1].values()) == 12 if commits else False

    await eventually(all_twelve_committed)
    await consumer.stop()
    assert await pair.consumer.applied_count(aggregate) == 12
    assert len(commits) <= 2, commits  # once when a poll found nothing (twice if one ran dry)


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


def _raising_sqlstate(pair: Pair, sqlstate: str, times: int) -> tuple[list[int], Any]:
    """A handler whose statement fails with a real PostgreSQL error `times` times, then applies."""
    calls: list[int] = []
    apply = applying_handler(pair.consumer)

    async def handler(session, event, payload) -> None:  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) <= times:
            await session.execute(
                text(f"DO $$ BEGIN RAISE EXCEPTION 'injected' USING ERRCODE = '{sqlstate}'; END $$")
            )
        await apply(session, event, payload)

    return calls, handler


def _inbox(pair: Pair, name: str, handler: Any, attempts: int) -> Inbox:
    return Inbox(
        name,
        pair.consumer.sessions,
        pair.consumer.tables.inbox,
        {StringValue.DESCRIPTOR.full_name: handler},
        policy=RetryPolicy(max_attempts=attempts, base_delay_s=0.01, max_delay_s=0.05),
    )


@pytest.mark.parametrize("sqlstate", ["40P01", "40001"])  # deadlock, serialization failure
async def test_a_deadlock_or_serialization_failure_in_a_handler_is_retried_and_applied_once(
    pair: Pair, sqlstate: str
) -> None:
    aggregate = str(uuid.uuid4())
    calls, handler = _raising_sqlstate(pair, sqlstate, times=2)
    delivery = Delivery(pair.topic, 0, 0, _envelope_bytes("x", aggregate), key=aggregate.encode())
    assert await _inbox(pair, "conflicts", handler, attempts=5).deliver(delivery) == "processed"
    assert len(calls) == 3
    assert await pair.consumer.applied_count(aggregate) == 1


async def test_a_conflict_that_never_clears_is_parked_after_the_bound_not_retried_for_ever(
    pair: Pair,
) -> None:
    aggregate = str(uuid.uuid4())
    calls, handler = _raising_sqlstate(pair, "40P01", times=1000)
    delivery = Delivery(pair.topic, 0, 0, _envelope_bytes("x", aggregate), key=aggregate.encode())
    assert await _inbox(pair, "stuck", handler, attempts=4).deliver(delivery) == "parked"
    assert len(calls) == 4
    row = await _inbox_row(pair, "stuck")
    assert row.state == "failed" and "kept conflicting" in row.last_error
    assert await pair.consumer.applied_count(aggregate) == 0


async def test_a_parked_event_is_applied_once_when_replayed_under_a_higher_generation(
    pair: Pair,
) -> None:
    aggregate = str(uuid.uuid4())
    calls, handler = _raising_sqlstate(pair, "40P01", times=2)
    inbox = _inbox(pair, "replayed", handler, attempts=2)
    value, key = _envelope_bytes("x", aggregate), aggregate.encode()
    assert await inbox.deliver(Delivery(pair.topic, 0, 0, value, key=key)) == "parked"

    # The broker's redelivery of the parked record leaves it parked, its handler not run.
    assert await inbox.deliver(Delivery(pair.topic, 0, 0, value, key=key)) == "duplicate"
    assert len(calls) == 2
    # An operator's replay raises the generation: applied once, then a duplicate.
    replay = Delivery(pair.topic, 0, 9, value, [("dispatch-generation", b"1")], key)
    assert await inbox.deliver(replay) == "processed"
    assert await inbox.deliver(replay) == "duplicate"
    assert len(calls) == 3
    assert await pair.consumer.applied_count(aggregate) == 1
    assert (await _inbox_row(pair, "replayed")).state == "processed"


async def test_a_lost_database_connection_spends_no_attempt(pair: Pair) -> None:
    aggregate = str(uuid.uuid4())
    calls: list[int] = []
    apply = applying_handler(pair.consumer)

    async def handler(session, event, payload) -> None:  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) <= 2:  # the server ends this very connection, twice
            await session.execute(text("SELECT pg_terminate_backend(pg_backend_pid())"))
        await apply(session, event, payload)

    delivery = Delivery(pair.topic, 0, 0, _envelope_bytes("x", aggregate), key=aggregate.encode())
    # One attempt only: a lost connection must not count as one.
    assert await _inbox(pair, "outage", handler, attempts=1).deliver(delivery) == "processed"
    assert await pair.consumer.applied_count(aggregate) == 1


async def _inbox_row(pair: Pair, consumer: str) -> Any:
    t = pair.consumer.tables.inbox.c
    async with pair.consumer.sessions() as session:
        query = select(t.state, t.last_error).where(t.consumer == consumer)
        return (await session.execute(query)).one()


async def test_an_event_without_a_handler_is_ignored_without_a_transaction_or_an_inbox_row(
    pair: Pair,
) -> None:
    aggregate = str(uuid.uuid4())
    transactions: list[object] = []
    event.listen(pair.consumer.engine.sync_engine, "begin", transactions.append)
    inbox = _inbox(pair, "choosy", applying_handler(pair.consumer), attempts=1)
    unhandled = _bytes_of(Int64Value(value=7), aggregate)

    delivery = Delivery(pair.topic, 0, 0, unhandled, key=aggregate.encode())
    assert await inbox.deliver(delivery) == "ignored"
    assert transactions == []
    assert await _inbox_rows(pair, "choosy") == 0

    handled = Delivery(pair.topic, 0, 1, _envelope_bytes("x", aggregate), key=aggregate.encode())
    before = len(transactions)
    assert await inbox.deliver(handled) == "processed"
    assert len(transactions) > before, "the listener sees the inbox's transactions"
    assert await _inbox_rows(pair, "choosy") == 1


async def test_a_consumer_makes_one_span_for_an_applied_event_and_none_for_an_ignored_one(
    pair: Pair, span_exporter: InMemorySpanExporter
) -> None:
    """Each record names a trace of its own. Only the applied event's trace gains a span:
    the inbox's `consume <topic>`. (aiokafka's instrumentation, when it was installed,
    added a `<topic> receive` span to both.)"""
    aggregate = str(uuid.uuid4())
    ignored_trace, applied_trace = uuid.uuid4().hex, uuid.uuid4().hex
    records = [
        (ignored_trace, _bytes_of(Int64Value(value=7), aggregate)),  # no handler for it
        (applied_trace, _envelope_bytes("traced", aggregate)),
    ]
    producer = kafka.make_producer(pair.bootstrap, "traced-" + aggregate)
    await producer.start()
    try:
        for trace_id, value in records:  # one key, one partition: the ignored one first
            headers = [("traceparent", f"00-{trace_id}-b7ad6b7169203331-01".encode())]
            await producer.send_and_wait(pair.topic, value, key=aggregate.encode(), headers=headers)
    finally:
        await producer.stop()

    def spans_of(trace_id: str) -> list[Any]:
        wanted = int(trace_id, 16)
        return [s for s in span_exporter.get_finished_spans() if s.context.trace_id == wanted]

    async def applied_and_its_span_ended() -> bool:
        return await pair.consumer.applied_count(aggregate) == 1 and bool(spans_of(applied_trace))

    consumer = await start_consumer(pair.consumer, pair.bootstrap, pair.topic, "g-" + aggregate)
    try:
        await eventually(applied_and_its_span_ended)
    finally:
        await consumer.stop()
    assert [(s.name, s.kind) for s in spans_of(applied_trace)] == [
        (f"consume {pair.topic}", SpanKind.CONSUMER)
    ]
    assert spans_of(ignored_trace) == []


async def _inbox_rows(pair: Pair, consumer: str) -> int:
    t = pair.consumer.tables.inbox.c
    return int(await pair.consumer.scalar(select(func.count()).where(t.consumer == consumer)))


async def test_a_handler_that_fails_after_writing_leaves_nothing_written(pair: Pair) -> None:
    # The handler's write and the marker are one transaction: a write that ran outside it
    # (on a connection that commits each statement, say) would outlive the failure.
    aggregate = str(uuid.uuid4())

    async def writes_then_fails(session, event, payload) -> None:  # type: ignore[no-untyped-def]
        await session.execute(pair.consumer.switches.insert().values(name=aggregate))
        raise ValueError("the handler failed after its write")

    inbox = _inbox(pair, "half-done", writes_then_fails, attempts=1)
    delivery = Delivery(pair.topic, 0, 0, _envelope_bytes("x", aggregate), key=aggregate.encode())
    assert await inbox.deliver(delivery) == "parked"
    assert await _switches_named(pair, aggregate) == 0


async def test_a_handlers_writes_left_unflushed_commit_with_the_marker_or_not_at_all(
    pair: Pair,
) -> None:
    # The session's pending ORM writes reach the database inside the marker's transaction,
    # not after its commit and on their own.
    Switch = switch_class(pair.consumer)
    taken = f"taken-{uuid.uuid4()}"
    async with pair.consumer.sessions() as session, session.begin():
        await session.execute(pair.consumer.switches.insert().values(name=taken))
    apply = applying_handler(pair.consumer)

    def adding(name: str) -> Any:
        async def handler(session, event, payload) -> None:  # type: ignore[no-untyped-def]
            await apply(session, event, payload)
            session.add(Switch(name))  # not flushed: the inbox's commit writes it

        return handler

    applied, refused = str(uuid.uuid4()), str(uuid.uuid4())
    fresh = _inbox(pair, "orm-fresh", adding(applied), attempts=1)
    delivery = Delivery(pair.topic, 0, 0, _envelope_bytes("x", applied), key=applied.encode())
    assert await fresh.deliver(delivery) == "processed"
    assert await _switches_named(pair, applied) == 1
    assert await pair.consumer.applied_count(applied) == 1

    clashing = _inbox(pair, "orm-clash", adding(taken), attempts=1)
    delivery = Delivery(pair.topic, 0, 1, _envelope_bytes("y", refused), key=refused.encode())
    assert await clashing.deliver(delivery) == "parked"
    assert await pair.consumer.applied_count(refused) == 0, "the marker committed alone"


async def _switches_named(pair: Pair, name: str) -> int:
    t = pair.consumer.switches.c
    return int(await pair.consumer.scalar(select(func.count()).where(t.name == name)))
