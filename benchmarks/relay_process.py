"""The producing side of `make bench-relay`, each in a process of its own, as a service's
process runs its relay: on uvloop, with JSON logs, and with tracing configured as
servicekit.runtime.service_main configures it (the exporter OTEL_TRACES_EXPORTER names),
or, for the stripped configuration, with no tracing configured at all.

    python -m benchmarks.relay_process relay    until SIGTERM; says `relaying` once started
    python -m benchmarks.relay_process bare     sends BENCH_BARE_ROWS records to BENCH_TOPIC,
                                                then prints its rows/s

The relay reads BENCH_DATABASE_URL's outbox, both send to KAFKA_BOOTSTRAP as the
KAFKA_USERNAME the environment names. A process of their own, rather than the benchmark's:
the benchmark's consumer, which notes when each record arrives, would otherwise take the
producer's CPU on the same event loop, and a process's tracing is configured once for good.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
import uuid

from google.protobuf.wrappers_pb2 import StringValue
from sqlalchemy import MetaData

from servicekit import db, envelope, kafka
from servicekit.logs import configure_logging
from servicekit.relay import OutboxRelay
from servicekit.runtime import run_event_loop
from servicekit.schema import add_eventing_tables
from servicekit.tracing import configure_tracing

RELAYING = "relaying"
# BENCH_TRACING=off: the stripped configuration; anything else configures tracing.
TRACING_OFF = "off"


async def relay() -> None:
    """The settings every service's relay runs with; only the idle wait is shorter, so that
    it starts draining promptly."""
    engine = db.make_engine(os.environ["BENCH_DATABASE_URL"])
    tables = add_eventing_tables(MetaData())
    producer = kafka.make_producer(os.environ["KAFKA_BOOTSTRAP"], "bench-relay")
    await producer.start()
    outbox_relay = OutboxRelay(
        db.make_session_factory(engine),
        tables.outbox,
        kafka.ProducerLink.of(producer),
        idle_wait_s=0.005,
    )
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    print(RELAYING, flush=True)
    try:
        await outbox_relay.run(stopping)
    finally:
        await producer.stop()
        await engine.dispose()


def bare_messages(rows: int) -> list[tuple[bytes, bytes, list[tuple[str, bytes]]]]:
    """The relay's records without the relay: its key (an aggregate id), envelope and
    headers. The key matters: the producer hashes it in Python to pick the partition."""
    messages = []
    for _ in range(rows):
        key, event_id = str(uuid.uuid4()), uuid.uuid4()
        wrapped = envelope.wrap(StringValue(value="b"), key, "bench", {}, event_id)
        headers = [
            ("event-id", str(event_id).encode()),
            ("event-type", wrapped.event_type.encode()),
            ("dispatch-generation", b"0"),
        ]
        messages.append((key.encode(), wrapped.SerializeToString(), headers))
    return messages


async def bare() -> None:
    """Sends the records, prepared before the clock starts, from a bare idempotent producer;
    prints the rows/s as one JSON object."""
    topic, rows = os.environ["BENCH_TOPIC"], int(os.environ["BENCH_BARE_ROWS"])
    producer = kafka.make_producer(os.environ["KAFKA_BOOTSTRAP"], "bench-bare")
    await producer.start()
    messages = bare_messages(rows)
    started = time.time()
    futures = [
        await producer.send(topic, value, key=key, headers=headers)
        for key, value, headers in messages
    ]
    await asyncio.gather(*futures)
    elapsed = time.time() - started
    await producer.stop()
    print(json.dumps({"rows_per_s": rows / elapsed}), flush=True)


def main() -> None:
    role = sys.argv[1]
    configure_logging(f"bench-{role}")
    if os.environ.get("BENCH_TRACING", "") != TRACING_OFF:
        configure_tracing(f"bench-{role}")
    run_event_loop(relay() if role == "relay" else bare())


if __name__ == "__main__":
    main()
