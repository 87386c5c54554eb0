"""An idle relay and a trickle through it: `python -m benchmarks.relay_idle`. Asserts nothing.

One relay as a service runs it (servicekit's defaults, three lanes, leading), on a database
and a topic of its own:
1. Idle for 20 s: the process's CPU per second (the relay and its idle producer) and the
   database's committed transactions per second (each of the relay's autocommit statements
   is one; PostgreSQL's statistics lag by up to a second per session).
2. A trickle: a row committed every 0.2 s for 20 s, each read back by a consumer: the
   latency from its commit to its arrival, p50 and p99.
The last line is one JSON object with the figures. Run it against two trees alternately
(PYTHONPATH) to compare them on the same machine in the same hour.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
import uuid

import psycopg
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from sqlalchemy import MetaData

from benchmarks.relay import Receiver, commit_rows
from servicekit import db, kafka
from servicekit.kafka_access import client_security
from servicekit.outbox import Outbox
from servicekit.relay import OutboxRelay
from servicekit.schema import add_eventing_tables
from tests.support.infrastructure import create_database, drop_database, ensure_infrastructure
from tests.support.schema import create_tables

IDLE_S = 20.0
SETTLE_S = 2.0  # the relay's first claims and connections, before the window opens
TRICKLE_GAP_S = 0.2
TRICKLE_ROWS = 100


def _commits(admin_dsn: str, database: str) -> int:
    with psycopg.connect(admin_dsn, autocommit=True) as connection:
        row = connection.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = %s", (database,)
        ).fetchone()
    assert row is not None
    return int(row[0])


async def _idle(admin_dsn: str, database: str) -> dict[str, float]:
    await asyncio.sleep(SETTLE_S)
    commits, cpu = _commits(admin_dsn, database), time.process_time()
    await asyncio.sleep(IDLE_S)
    return {
        "idle_cpu_ms_per_s": round((time.process_time() - cpu) * 1000 / IDLE_S, 2),
        "idle_statements_per_s": round((_commits(admin_dsn, database) - commits) / IDLE_S, 1),
    }


async def _trickle(sessions, outbox: Outbox, bootstrap: str, topic: str) -> dict[str, float]:  # type: ignore[no-untyped-def]
    receiver = Receiver(bootstrap, topic)
    await receiver.start()
    committed: dict[str, float] = {}
    try:
        for _ in range(TRICKLE_ROWS):
            committed |= await commit_rows(sessions, outbox, topic, 1)
            await asyncio.sleep(TRICKLE_GAP_S)
        await receiver.wait_for(TRICKLE_ROWS, 30)
    finally:
        await receiver.stop()
    latencies = sorted((receiver.arrived[i] - t) * 1000 for i, t in committed.items())
    return {
        "trickle_p50_ms": round(statistics.median(latencies), 1),
        "trickle_p99_ms": round(latencies[int(len(latencies) * 0.99) - 1], 1),
    }


async def main() -> None:
    infra = ensure_infrastructure()
    name = f"bench_idle_{uuid.uuid4().hex[:8]}"
    url = create_database(infra.pg_admin_dsn, name).replace(
        "postgresql://", "postgresql+psycopg://"
    )
    tables = add_eventing_tables(metadata := MetaData())
    engine = db.make_engine(url)
    await create_tables(engine, metadata)
    sessions = db.make_session_factory(engine)
    topic = f"bench{uuid.uuid4().hex[:6]}.idle"
    admin = AIOKafkaAdminClient(bootstrap_servers=infra.kafka_bootstrap, **client_security())
    await admin.start()
    await admin.create_topics([NewTopic(topic, 3, 1)])
    producer = kafka.make_producer(infra.kafka_bootstrap, "bench-idle")
    await producer.start()
    relay = OutboxRelay(sessions, tables.outbox, kafka.ProducerLink.of(producer))
    stopping = asyncio.Event()
    running = asyncio.create_task(relay.run(stopping))
    try:
        figures = await _idle(infra.pg_admin_dsn, name)
        figures |= await _trickle(
            sessions, Outbox(tables.outbox, "bench"), infra.kafka_bootstrap, topic
        )
    finally:
        stopping.set()
        await running
        await producer.stop()
        await admin.delete_topics([topic])
        await admin.close()
        await engine.dispose()
        drop_database(infra.pg_admin_dsn, name)
    print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
