"""Outbox relay benchmark: `make bench-relay`. Prints figures; asserts nothing.

1. Burst: 20,000 committed outbox rows drained by one relay to a consumer: relay rows/s and
   commit-to-consume latency p50/p99 (dominated by queueing, since all rows wait at once).
2. Bare: the same 20,000 messages sent by a bare idempotent aiokafka producer, for scale.
   Bursts and bare runs alternate for three rounds; the figures are the rounds' medians.
3. Steady: rows committed at 1,000 rows/s for 10 s while the relay runs: p99 latency.
All of it on the platform's broker (authenticated, ACLs) and on a throwaway broker with the
same settings less its security (benchmarks.open_broker), both running, each warmed by one
uncounted burst, the rounds alternating between them: what the boundary costs.
The last line is one JSON object with the figures, the second broker's under
`without_boundary`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from google.protobuf.wrappers_pb2 import StringValue
from sqlalchemy import MetaData, exists, select

from benchmarks.open_broker import open_broker
from benchmarks.stats import percentile
from servicekit import db, envelope, kafka
from servicekit.kafka_access import client_security
from servicekit.outbox import Outbox
from servicekit.relay import OutboxRelay
from servicekit.schema import PENDING, EventingTables, add_eventing_tables
from tests.support.infrastructure import create_database, drop_database, ensure_infrastructure
from tests.support.schema import create_tables

BURST_ROWS = 20_000
STEADY_RATE = 1_000
ROUNDS = 3
STEADY_SECONDS = 10
CREDENTIALS = ("KAFKA_USERNAME", "KAFKA_PASSWORD")
SECURED, OPEN = "secured", "open"


class Receiver:
    """Consumes a topic and notes when each event id arrived."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.arrived: dict[str, float] = {}
        self._consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            auto_offset_reset="latest",
            group_id=f"bench-{uuid.uuid4().hex[:6]}",
            enable_auto_commit=False,
            **client_security(),
        )
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self._consumer.start()
        await self._consumer.getmany(timeout_ms=500)  # joined and positioned at the end
        self._task = asyncio.create_task(self._receive())

    async def _receive(self) -> None:
        while True:
            for records in (await self._consumer.getmany(timeout_ms=100)).values():
                now = time.time()
                for record in records:
                    self.arrived[dict(record.headers)["event-id"].decode()] = now

    async def wait_for(self, count: int, timeout_s: float = 300) -> None:
        deadline = time.time() + timeout_s
        while len(self.arrived) < count and time.time() < deadline:
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
        await self._consumer.stop()


async def commit_rows(sessions, outbox: Outbox, topic: str, count: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    committed: dict[str, float] = {}
    async with sessions() as session, session.begin():
        ids = [
            await outbox.append(session, topic, str(uuid.uuid4()), StringValue(value="b"))
            for _ in range(count)
        ]
    now = time.time()
    committed.update({str(i): now for i in ids})
    return committed


async def pending(sessions, tables: EventingTables) -> bool:  # type: ignore[no-untyped-def]
    """Whether any row is still pending. Polled every 20 ms while the relay drains, so it
    reads the pending-rows index only; counting every row competed with the relay."""
    t = tables.outbox.c
    query = select(exists().where(t.state == PENDING))
    async with sessions() as session:
        return bool(await session.scalar(query))


def latencies_ms(committed: dict[str, float], arrived: dict[str, float]) -> list[float]:
    return sorted((arrived[i] - t) * 1000 for i, t in committed.items() if i in arrived)


async def burst(sessions, tables: EventingTables, bootstrap: str, topic: str) -> dict[str, float]:  # type: ignore[no-untyped-def]
    outbox = Outbox(tables.outbox, "bench")
    receiver = Receiver(bootstrap, topic)
    await receiver.start()
    committed: dict[str, float] = {}
    for _ in range(BURST_ROWS // 1000):
        committed |= await commit_rows(sessions, outbox, topic, 1000)
    task, stopping, producer = await _start_relay(sessions, tables, bootstrap)
    started = time.time()
    while await pending(sessions, tables):
        await asyncio.sleep(0.02)
    elapsed = time.time() - started
    await receiver.wait_for(BURST_ROWS)
    stopping.set()
    await task
    await producer.stop()
    await receiver.stop()
    lat = latencies_ms(committed, receiver.arrived)
    return {
        "relay_rows_per_s": BURST_ROWS / elapsed,
        "p50_ms": statistics.median(lat),
        "p99_ms": percentile(lat, 0.99),
        "received": len(receiver.arrived),
    }


async def bare(bootstrap: str, topic: str) -> float:
    """The same messages from a bare producer, with a receiver running as in the burst:
    the relay's key (an aggregate id), payload and headers, prepared before the clock
    starts. The key matters: the producer hashes it in Python to pick the partition."""
    receiver = Receiver(bootstrap, topic)
    await receiver.start()
    producer = kafka.make_producer(bootstrap, "bench-bare")
    await producer.start()
    messages = []
    for _ in range(BURST_ROWS):
        key, event_id = str(uuid.uuid4()), uuid.uuid4()
        wrapped = envelope.wrap(StringValue(value="b"), key, "bench", {}, event_id)
        headers = [
            ("event-id", str(event_id).encode()),
            ("event-type", wrapped.event_type.encode()),
            ("dispatch-generation", b"0"),
        ]
        messages.append((key.encode(), wrapped.SerializeToString(), headers))
    started = time.time()
    futures = [
        await producer.send(topic, value, key=key, headers=headers)
        for key, value, headers in messages
    ]
    await asyncio.gather(*futures)
    elapsed = time.time() - started
    await producer.stop()
    await receiver.wait_for(BURST_ROWS)
    await receiver.stop()
    return BURST_ROWS / elapsed


async def steady(sessions, tables: EventingTables, bootstrap: str, topic: str) -> float:  # type: ignore[no-untyped-def]
    outbox = Outbox(tables.outbox, "bench")
    receiver = Receiver(bootstrap, topic)
    await receiver.start()
    task, stopping, producer = await _start_relay(sessions, tables, bootstrap)
    committed: dict[str, float] = {}
    tick, per_tick = 0.01, STEADY_RATE // 100
    started = time.time()
    for step in range(STEADY_SECONDS * 100):
        committed |= await commit_rows(sessions, outbox, topic, per_tick)
        await asyncio.sleep(max(0.0, started + (step + 1) * tick - time.time()))
    await receiver.wait_for(len(committed), 60)
    stopping.set()
    await task
    await producer.stop()
    await receiver.stop()
    return percentile(latencies_ms(committed, receiver.arrived), 0.99)


async def _start_relay(sessions, tables: EventingTables, bootstrap: str):  # type: ignore[no-untyped-def]
    producer = kafka.make_producer(bootstrap, "bench-relay")
    await producer.start()
    # The settings every service runs with; only the idle wait is shorter, to start promptly.
    link = kafka.ProducerLink.of(producer)
    relay = OutboxRelay(sessions, tables.outbox, link, idle_wait_s=0.005)
    stopping = asyncio.Event()
    return asyncio.create_task(relay.run(stopping)), stopping, producer


@dataclass
class Broker:
    """One broker under measurement, with this run's database, tables and topics on it."""

    label: str
    bootstrap: str
    secured: bool
    sessions: Any
    tables: EventingTables
    topics: dict[str, str]
    rounds: list[dict[str, float]] = field(default_factory=list)

    @contextlib.contextmanager
    def as_client(self) -> Iterator[None]:
        """This process's Kafka clients as this broker wants them: the open one has no
        credentials to check (servicekit.kafka_access reads them when a client is made)."""
        if self.secured:
            yield
            return
        with unauthenticated():
            yield

    async def burst(self, topic: str) -> dict[str, float]:
        with self.as_client():
            return await burst(self.sessions, self.tables, self.bootstrap, self.topics[topic])

    async def bare(self, topic: str) -> float:
        with self.as_client():
            return await bare(self.bootstrap, self.topics[topic])

    async def steady(self) -> float:
        with self.as_client():
            return await steady(self.sessions, self.tables, self.bootstrap, self.topics["steady"])


@contextlib.asynccontextmanager
async def prepared(
    label: str, bootstrap: str, secured: bool, pg_admin_dsn: str
) -> AsyncIterator[Broker]:
    """A database of its own for the relay's outbox and this run's topics on the broker."""
    name = f"bench_relay_{uuid.uuid4().hex[:8]}"
    url = create_database(pg_admin_dsn, name).replace("postgresql://", "postgresql+psycopg://")
    metadata = MetaData()
    tables = add_eventing_tables(metadata)
    engine = db.make_engine(url)
    await create_tables(engine, metadata)
    prefix = f"bench{uuid.uuid4().hex[:6]}."
    names = ["warm", "steady"] + [f"{kind}{i}" for i in range(ROUNDS) for kind in ("burst", "bare")]
    topics = {topic: prefix + topic for topic in names}
    broker = Broker(label, bootstrap, secured, db.make_session_factory(engine), tables, topics)
    with broker.as_client():
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **client_security())
    await admin.start()
    await admin.create_topics([NewTopic(t, 6, 1) for t in topics.values()])
    try:
        yield broker
    finally:
        await admin.delete_topics(list(topics.values()))
        await admin.close()
        await engine.dispose()
        drop_database(pg_admin_dsn, name)


async def measure(brokers: list[Broker]) -> None:
    """Every broker gets one uncounted burst first (a broker started for this run has a
    cold JVM), then the rounds alternate between them, relay then bare producer, each round
    in the other order, so each broker sees the same machine."""
    for broker in brokers:
        await broker.burst("warm")
    for i in range(ROUNDS):
        # Each round starts with the other broker: the one measured second works while the
        # first still settles its own burst (flushes, the receiver's fetches).
        for broker in brokers if i % 2 == 0 else brokers[::-1]:
            figures = await broker.burst(f"burst{i}")
            figures["bare_rows_per_s"] = await broker.bare(f"bare{i}")
            broker.rounds.append(figures)
            print(
                f"round {i + 1}, {broker.label}: relay {figures['relay_rows_per_s']:.0f} rows/s, "
                f"bare {figures['bare_rows_per_s']:.0f} rows/s"
            )


async def summary(broker: Broker) -> dict[str, float]:
    def median(name: str) -> float:
        return statistics.median(r[name] for r in broker.rounds)

    steady_p99 = await broker.steady()
    result = {
        "relay_rows_per_s": round(median("relay_rows_per_s"), 1),
        "bare_rows_per_s": round(median("bare_rows_per_s"), 1),
        "ratio": round(median("relay_rows_per_s") / median("bare_rows_per_s"), 3),
        "p50_ms": round(median("p50_ms"), 1),
        "p99_ms": round(median("p99_ms"), 1),
        "p99_ms_at_1000_rows_per_s": round(steady_p99, 1),
    }
    print(
        f"{broker.label}: medians of {ROUNDS} rounds of {BURST_ROWS} rows: "
        f"relay {result['relay_rows_per_s']} rows/s, "
        f"bare producer {result['bare_rows_per_s']} rows/s, ratio {result['ratio']}; "
        f"burst commit-to-consume p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms; "
        f"steady {STEADY_RATE} rows/s for {STEADY_SECONDS}s: p99 {steady_p99:.1f} ms"
    )
    return result


@contextlib.contextmanager
def unauthenticated() -> Iterator[None]:
    """This process's Kafka clients without credentials, for the open broker."""
    saved = {name: os.environ.pop(name) for name in CREDENTIALS if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


async def main() -> None:
    """The platform's broker (SASL/SCRAM, the StandardAuthorizer) and, running beside it,
    a broker with the same settings less either (benchmarks.open_broker)."""
    infra = ensure_infrastructure()
    print(
        f"brokers: {SECURED} (the platform's: SASL/SCRAM-SHA-512, the StandardAuthorizer) "
        f"and {OPEN} (the same settings without authentication or ACLs, started for this run)"
    )
    async with (
        open_broker() as open_bootstrap,
        prepared(SECURED, infra.kafka_bootstrap, True, infra.pg_admin_dsn) as secured,
        prepared(OPEN, open_bootstrap, False, infra.pg_admin_dsn) as without_security,
    ):
        await measure([secured, without_security])
        result = await summary(secured)
        without = await summary(without_security)
    ratios = {
        f"{key}_ratio_on_off": round(result[key] / without[key], 3)
        for key in ("relay_rows_per_s", "bare_rows_per_s")
        if without[key]
    }
    print(
        f"boundary on/off: relay rows/s x{ratios.get('relay_rows_per_s_ratio_on_off')}, "
        f"bare producer x{ratios.get('bare_rows_per_s_ratio_on_off')}"
    )
    print(json.dumps({**result, "without_boundary": without, **ratios}))


if __name__ == "__main__":
    asyncio.run(main())
