"""Whatever anyone writes to the topics the services consume (booking, payment and access),
they stay up and lose nothing: each bad record is parked once with a reason by every
consumer of its topic (notify consumes all three), and every valid event around it is
applied by the consumer that reacts to it (the others ignore it and keep no row of it)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaProducer
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from liftfit.booking.v1 import events_pb2 as booking_events
from liftfit.payment.v1 import events_pb2 as payment_events
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import Table, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import envelope
from servicekit.kafka_access import client_security
from services.access.adapters import orm as access_orm
from services.booking.adapters import orm as booking_orm
from services.notify.adapters import orm as notify_orm
from tests.e2e.conftest import Platform
from tests.support import tls
from tests.support.waiting import eventually

TOPICS = ("payment.events", "access.events", "booking.events")
Headers = list[tuple[str, bytes]]


@dataclass(frozen=True)
class Sent:
    topic: str
    partition: int
    offset: int
    valid_event_id: str | None  # None for a record that must be parked


def _envelope(event: Message, aggregate_id: str, event_id: str | None = None) -> bytes:
    wrapped = envelope.wrap(event, aggregate_id, "attacker", {}, uuid.uuid4())
    if event_id is not None:
        wrapped.event_id = event_id
    return wrapped.SerializeToString()


def _some_event() -> tuple[Message, str]:
    booking_id = str(uuid.uuid4())
    return booking_events.BookingExpired(booking_id=booking_id), booking_id


text_header_names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=20)
random_headers = st.lists(st.tuples(text_header_names, st.binary(max_size=60)), max_size=4)


@st.composite
def bad_records(draw: st.DrawFn) -> tuple[bytes | None, bytes, Headers]:
    """(key, value, headers) of a record that no consumer may apply."""
    kind = draw(
        st.sampled_from(
            ["bytes", "unknown_type", "generation", "traceparent", "event_id", "key", "payload"]
        )
    )
    event, aggregate = _some_event()
    key = aggregate.encode()
    if kind == "bytes":
        value = b"\x0a" + draw(st.binary(max_size=200))  # never an envelope with an id
        return draw(st.none() | st.binary(max_size=40)), value, draw(random_headers)
    if kind == "unknown_type":
        wrapped = envelope.wrap(event, aggregate, "attacker", {}, uuid.uuid4())
        wrapped.event_type = f"liftfit.nowhere.v1.Unknown{uuid.uuid4().hex[:6]}"
        return key, wrapped.SerializeToString(), []
    if kind == "generation":
        bad = draw(st.sampled_from([b"-1", b"x", b"1e3", b"99999999999", b"\xff"]))
        return key, _envelope(event, aggregate), [("dispatch-generation", bad)]
    if kind == "traceparent":
        bad = draw(st.sampled_from([b"\xff\xfe\xfd", b"\x00" * 10, b"a" * 600]))
        return key, _envelope(event, aggregate), [("traceparent", bad)]
    if kind == "event_id":
        bad_id = draw(st.sampled_from(["urn:uuid:" + str(uuid.uuid4()), "", "1-2-3", "\x00"]))
        return key, _envelope(event, aggregate, bad_id), []
    if kind == "key":
        return draw(st.none() | st.just(b"another")), _envelope(event, aggregate), []
    # A first field that claims one byte more than follows: no parser takes that, whatever
    # the bytes. Random bytes alone may parse: b"u6\xfe4\xff" is a BookingExpired with an
    # unknown field (14, four bytes), which a consumer rightly applies.
    content = draw(st.binary(max_size=50))
    wrapped = envelope.wrap(event, aggregate, "attacker", {}, uuid.uuid4())
    wrapped.payload.value = b"\x0a" + bytes([len(content) + 1]) + content
    return key, wrapped.SerializeToString(), []


records = st.lists(
    st.tuples(st.sampled_from(TOPICS), st.booleans() | st.none(), bad_records()),
    min_size=1,
    max_size=6,
)


async def _send_valid(producer: AIOKafkaProducer, topic: str, platform: Platform) -> Sent:
    """A valid event that one consumer of the topic applies with a visible effect."""
    if topic == "booking.events":  # payment opens a payment for it
        booking_id = str(uuid.uuid4())
        event: Message = booking_events.PaymentRequested(
            booking_id=booking_id,
            org_id=str(uuid.uuid4()),
            user="anna",
            price=booking_events.Money(amount=45000, currency="CZK"),
            slot_id=str(uuid.uuid4()),
        )
        aggregate = booking_id
    else:  # booking credits the organisation's passes (the topic does not matter to it)
        aggregate = str(uuid.uuid4())
        event = payment_events.PassOrderPaid(
            order_id=str(uuid.uuid4()), org_id=aggregate, entries=2, plan_code="pass-2"
        )
    event_id = str(uuid.uuid4())
    value = _envelope(event, aggregate, event_id)
    sent = await producer.send_and_wait(
        platform.prefix + topic,
        value,
        key=aggregate.encode(),
        headers=[("event-id", event_id.encode())],
    )
    return Sent(topic, sent.partition, sent.offset, event_id)


async def _send_bad(
    producer: AIOKafkaProducer, topic: str, platform: Platform, record: Any
) -> Sent:
    key, value, headers = record
    sent = await producer.send_and_wait(platform.prefix + topic, value, key=key, headers=headers)
    return Sent(topic, sent.partition, sent.offset, None)


def _inboxes_of(
    platform: Platform, sent: Sent
) -> list[tuple[async_sessionmaker[AsyncSession], Table]]:
    """Where the record leaves a row: a bad one in every consumer of its topic, a valid one
    only in the consumer that reacts to it (an event without a handler leaves none)."""
    payment = (platform.payment.sessions, platform.payment.tables.eventing.inbox)
    booking = (platform.booking.uows.sessions, booking_orm.eventing.inbox)
    if sent.valid_event_id is not None:
        return [payment] if sent.topic == "booking.events" else [booking]
    notify = (platform.notify.deps.uows.sessions, notify_orm.eventing.inbox)
    if sent.topic == "booking.events":  # payment, access and notify consume it
        return [payment, (platform.access.deps.uows.sessions, access_orm.eventing.inbox), notify]
    return [booking, notify]


async def _rows_at(platform: Platform, sent: Sent) -> list[Any]:
    """The record's inbox row in each consumer that keeps one; empty until each has it."""
    found = []
    for sessions, inbox in _inboxes_of(platform, sent):
        t = inbox.c
        query = select(t.state, t.event_id, t.last_error).where(
            t.topic == platform.prefix + sent.topic,
            t.partition == sent.partition,
            t.offset == sent.offset,
        )
        async with sessions() as session:
            rows = list((await session.execute(query)).all())
        if not rows:
            return []
        found += rows
    return found


async def _serving(port: int) -> bool:
    async with tls.channel(f"127.0.0.1:{port}") as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


@settings(
    max_examples=12,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a failure prints as drawn
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batch=records)
async def test_bad_records_are_parked_once_and_the_valid_events_around_them_applied(
    platform: Platform, span_exporter: InMemorySpanExporter, batch: list[Any]
) -> None:
    """With tracing on (span_exporter), so that every applied record's trace headers are
    read into its consume span's context."""
    producer = AIOKafkaProducer(
        bootstrap_servers=platform.booking.settings.kafka_bootstrap, **client_security()
    )
    await producer.start()
    try:
        sent: list[Sent] = []
        for topic, valid_before, bad in batch:
            if valid_before:
                sent.append(await _send_valid(producer, topic, platform))
            sent.append(await _send_bad(producer, topic, platform, bad))
            if valid_before is False:
                sent.append(await _send_valid(producer, topic, platform))
    finally:
        await producer.stop()
    for record in sent:

        async def settled(record: Sent = record) -> list[Any]:
            return await _rows_at(platform, record)

        rows = await eventually(settled, 30)
        # Once per consumer, not once per retry.
        assert len(rows) == len(_inboxes_of(platform, record)), rows
        for row in rows:
            if record.valid_event_id is None:
                assert row.state == "failed" and row.last_error, row
            else:
                assert (row.state, row.event_id) == ("processed", record.valid_event_id), row
    for app in (platform.booking, platform.payment, platform.access, platform.notify):
        assert not app.runtime.supervisor.down
        assert await _serving(app.grpc_port)
