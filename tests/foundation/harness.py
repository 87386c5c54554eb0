"""A minimal producer and consumer built from servicekit alone, on real PostgreSQL and Kafka.

The mechanics tests use it instead of a service, so they prove the outbox, relay, inbox
and timers without depending on booking or payment rules. The consumer's one effect is a
row in `applied` per handled event: a duplicate effect shows up as a second row.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from google.protobuf.message import Message
from google.protobuf.wrappers_pb2 import StringValue
from liftfit.events.v1.envelope_pb2 import EventEnvelope
from sqlalchemy import Column, MetaData, Table, Text, func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import registry

from servicekit import db, kafka
from servicekit.consumer import InboxConsumer
from servicekit.inbox import Inbox
from servicekit.outbox import Outbox
from servicekit.relay import OutboxRelay
from servicekit.retry import RetryPolicy
from servicekit.schema import EventingTables, add_eventing_tables
from tests.support import waiting
from tests.support.schema import create_tables

TOPIC = "skeleton.events"


@dataclass
class Side:
    """One service's database: its eventing tables plus `applied` and `switches`."""

    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    tables: EventingTables
    applied: Table
    switches: Table

    @classmethod
    async def create(cls, url: str) -> Side:
        metadata = MetaData()
        tables = add_eventing_tables(metadata)
        applied = Table(
            "applied",
            metadata,
            Column("event_id", Text),
            Column("aggregate_id", Text),
            Column("note", Text),
        )
        switches = Table("switches", metadata, Column("name", Text, primary_key=True))
        engine = db.make_engine(url, pool_size=5)
        await create_tables(engine, metadata)
        return cls(engine, db.make_session_factory(engine), tables, applied, switches)

    async def scalar(self, query: Any) -> Any:
        async with self.sessions() as session:
            return (await session.execute(query)).scalar_one()

    async def applied_count(self, aggregate_id: str | None = None) -> int:
        query = select(func.count()).select_from(self.applied)
        if aggregate_id is not None:
            query = query.where(self.applied.c.aggregate_id == aggregate_id)
        return int(await self.scalar(query))

    async def outbox_states(self) -> dict[str, int]:
        async with self.sessions() as session:
            return (await Outbox(self.tables.outbox, "test").backlog(session)).counts


async def append_events(
    side: Side, topic: str, notes: list[str], aggregate_id: str | None = None
) -> list[uuid.UUID]:
    """Writes one outbox row per note, each in its own transaction, as a service would."""
    outbox = Outbox(side.tables.outbox, "harness")
    ids = []
    for note in notes:
        async with side.sessions() as session, session.begin():
            key = aggregate_id or str(uuid.uuid4())
            ids.append(await outbox.append(session, topic, key, StringValue(value=note)))
    return ids


def switch_class(side: Side) -> Callable[[str], object]:
    """A class the ORM maps onto this side's `switches`: a handler that adds one and does
    not flush leaves the write pending for whoever commits its session."""

    class Switch:
        def __init__(self, name: str) -> None:
            self.name = name

    registry().map_imperatively(Switch, side.switches)
    return Switch


def applying_handler(
    side: Side,
) -> Callable[[AsyncSession, EventEnvelope, Message], Awaitable[None]]:
    """Records the event in `applied`; fails for a 'poison' note until the switch is on."""

    async def apply(session: AsyncSession, event: EventEnvelope, payload: Message) -> None:
        assert isinstance(payload, StringValue)
        if payload.value == "poison":
            fixed = await session.execute(
                select(side.switches.c.name).where(side.switches.c.name == "poison-fixed")
            )
            if fixed.first() is None:
                raise ValueError("poison message: its cause is not fixed yet")
        await session.execute(
            side.applied.insert().values(
                event_id=event.event_id, aggregate_id=event.aggregate_id, note=payload.value
            )
        )

    return apply


@dataclass
class RunningConsumer:
    inbox: Inbox
    consumer: InboxConsumer
    task: asyncio.Task[None]
    stopping: asyncio.Event
    dead_letters: kafka.ProducerLink
    extra: list[Any] = field(default_factory=list)

    @property
    def kafka_consumer(self) -> AIOKafkaConsumer:
        connected = self.consumer.kafka_consumer
        assert connected is not None, "the consumer is not connected"
        return connected

    async def stop(self) -> None:
        self.stopping.set()
        await asyncio.wait_for(self.task, 10)
        await self.dead_letters.close()


async def start_consumer(
    side: Side,
    bootstrap: str,
    topic: str,
    group: str,
    policy: RetryPolicy | None = None,
    dead_letters: kafka.ProducerLink | None = None,
    watch: Callable[[AIOKafkaConsumer], None] = lambda consumer: None,
) -> RunningConsumer:
    """The consumer of `topic`, its dead-letter copies sent through `dead_letters` (a link
    to a producer of its own by default); `watch` sees each Kafka consumer it makes."""
    if dead_letters is None:
        producer = kafka.make_producer(bootstrap, f"{group}-dlq")
        await producer.start()
        dead_letters = kafka.ProducerLink.of(producer)
    inbox = Inbox(
        group,
        side.sessions,
        side.tables.inbox,
        {StringValue.DESCRIPTOR.full_name: applying_handler(side)},
        dead_letters=dead_letters,
        policy=policy or RetryPolicy(max_attempts=3, base_delay_s=0.05, max_delay_s=0.2),
    )

    def make_consumer() -> AIOKafkaConsumer:
        made = kafka.make_consumer(bootstrap, group, [topic])
        watch(made)
        return made

    consumer = InboxConsumer(make_consumer, inbox)
    stopping = asyncio.Event()
    task = asyncio.create_task(consumer.run(stopping))
    await waiting.eventually(_connected(consumer), 30)
    return RunningConsumer(inbox, consumer, task, stopping, dead_letters)


def _connected(consumer: InboxConsumer) -> Callable[[], Awaitable[bool]]:
    async def connected() -> bool:
        return consumer.kafka_consumer is not None

    return connected


@dataclass
class RunningRelay:
    relay: OutboxRelay
    producer: AIOKafkaProducer
    task: asyncio.Task[None]
    stopping: asyncio.Event

    async def stop(self) -> None:
        self.stopping.set()
        await asyncio.wait_for(self.task, 30)
        await self.producer.stop()


async def start_relay(
    side: Side,
    bootstrap: str,
    policy: RetryPolicy | None = None,
    batch_size: int = 500,
    idle_wait_s: float = 0.05,
) -> RunningRelay:
    producer = kafka.make_producer(bootstrap, f"relay-{uuid.uuid4().hex[:6]}")
    await producer.start()
    relay = OutboxRelay(
        side.sessions,
        side.tables.outbox,
        kafka.ProducerLink.of(producer),
        policy=policy or RetryPolicy(max_attempts=3, base_delay_s=0.05, max_delay_s=0.2),
        batch_size=batch_size,
        idle_wait_s=idle_wait_s,
    )
    stopping = asyncio.Event()
    return RunningRelay(relay, producer, asyncio.create_task(relay.run(stopping)), stopping)


async def eventually(check: Callable[[], Awaitable[bool]], timeout_s: float = 30.0) -> None:
    """Waits until check() holds; fails the test with a clear message otherwise."""
    await waiting.eventually(check, timeout_s)
