"""Outbox relay benchmark: `make bench-relay`. Prints figures; asserts nothing.

1. Burst: 20,000 committed outbox rows drained by one relay to a consumer: relay rows/s and
   commit-to-consume latency p50/p99 (dominated by queueing, since all rows wait at once).
2. Bare: the same 20,000 messages sent by a bare idempotent aiokafka producer, for scale.
   Bursts and bare runs alternate for three rounds; the figures are the rounds' medians.
3. Steady: rows committed at 1,000 rows/s for 10 s while the relay runs: p99 latency.

The relay and the bare producer each run in a process of their own
(benchmarks/relay_process.py, on uvloop, JSON logs), as a service runs its relay; this
process commits the rows, each in a sampled trace of its own as a service writes a row
inside the trace of the request that caused it, and consumes the records. The relay runs in
two configurations, each once in every round, the order turned every round:

- **platform**: tracing configured as a service's process configures it, every trace
  sampled and exported over OTLP to a Jaeger started for the run (benchmarks/jaeger.py):
  one publish span per batch, linked to each row. Its figures are the JSON line's own keys.
- **stripped**: no tracing configured at all, what this benchmark measured before; under
  `stripped`.

All of it on the platform's broker (authenticated, ACLs); the stripped relay and the bare
producer also on a throwaway broker with the same settings less its security
(benchmarks.open_broker), both running, each warmed by one uncounted burst, the rounds
alternating between them: what the boundary costs, under `without_boundary`, with the
on/off ratios of the stripped relay's and the bare producer's rows/s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from google.protobuf.wrappers_pb2 import StringValue
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from sqlalchemy import MetaData, exists, select

from benchmarks import relay_process
from benchmarks.configuration import SPANS_DROPPED, Configuration, deviations
from benchmarks.jaeger import Collector, running_collector
from benchmarks.open_broker import open_broker
from benchmarks.stats import percentile
from servicekit import db
from servicekit.kafka_access import client_security
from servicekit.outbox import Outbox
from servicekit.runtime import run_event_loop
from servicekit.schema import PENDING, EventingTables, add_eventing_tables
from tests.support.infrastructure import (
    REPO_ROOT,
    create_database,
    drop_database,
    ensure_infrastructure,
)
from tests.support.schema import create_tables

BURST_ROWS = int(os.environ.get("BENCH_BURST_ROWS", "20000"))
STEADY_RATE = 1_000
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
STEADY_SECONDS = int(os.environ.get("BENCH_STEADY_SECONDS", "10"))
CREDENTIALS = ("KAFKA_USERNAME", "KAFKA_PASSWORD")
SECURED, OPEN = "secured", "open"
PROCESS_START_S = 60.0
SERVICE_NAME = "bench-relay"  # the relay process's service.name in its spans

PLATFORM = Configuration(
    "platform",
    "tracing as a service's process has it: every trace sampled and exported over OTLP "
    "to Jaeger, one publish span per batch, linked to each row",
    platform=True,
)
STRIPPED = Configuration(
    "stripped",
    "stripped, for comparison only: no tracing configured",
    platform=False,
)


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


@contextlib.contextmanager
def in_a_trace_of_its_own() -> Iterator[None]:
    """A sampled trace context of its own, current for the block: the one a row is written
    in when a request causes it, and the relay's publish span links to it."""
    context = SpanContext(
        trace_id=random.getrandbits(128),
        span_id=random.getrandbits(64),
        is_remote=False,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    with trace.use_span(NonRecordingSpan(context)):
        yield


async def commit_rows(sessions, outbox: Outbox, topic: str, count: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    committed: dict[str, float] = {}
    ids = []
    async with sessions() as session, session.begin():
        for _ in range(count):
            with in_a_trace_of_its_own():
                ids.append(
                    await outbox.append(session, topic, str(uuid.uuid4()), StringValue(value="b"))
                )
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


@dataclass
class Broker:
    """One broker under measurement, with this run's database, tables and topics on it,
    the relay's configurations measured on it and each one's rounds."""

    label: str
    bootstrap: str
    secured: bool
    database_url: str
    sessions: Any
    tables: EventingTables
    topics: dict[str, str]
    configurations: Sequence[Configuration]
    rounds: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    bare_rounds: list[float] = field(default_factory=list)

    @contextlib.contextmanager
    def as_client(self) -> Iterator[None]:
        """This process's Kafka clients as this broker wants them: the open one has no
        credentials to check (servicekit.kafka_access reads them when a client is made)."""
        if self.secured:
            yield
            return
        with unauthenticated():
            yield

    def environment(self, extra: dict[str, str]) -> dict[str, str]:
        """A producing process's settings: this broker, as this process's clients see it."""
        with self.as_client():
            inherited = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        return {
            **inherited,
            "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "build" / "gen")]),
            "KAFKA_BOOTSTRAP": self.bootstrap,
            "BENCH_DATABASE_URL": self.database_url,
            **extra,
        }


@dataclass(frozen=True)
class Run:
    """Where this run's producing processes write their logs, and the collector."""

    logs: Path
    collector: Collector

    def relay_environment(self, broker: Broker, configuration: Configuration) -> dict[str, str]:
        tracing = "on" if configuration.platform else relay_process.TRACING_OFF
        env = broker.environment(
            {**configuration.traces(self.collector.otlp_endpoint), "BENCH_TRACING": tracing}
        )
        if configuration.platform and (problems := deviations(env, tls_parts=())):
            raise SystemExit("not the platform's own configuration: " + "; ".join(problems))
        return env


@contextlib.asynccontextmanager
async def relaying(
    run: Run, broker: Broker, configuration: Configuration
) -> AsyncIterator[list[bool]]:
    """A relay process draining the broker's outbox for the time of the block, from the
    moment it says it relays; SIGTERM after, and its exit awaited. The list yielded says,
    after the block, whether its span processor dropped spans."""
    dropped: list[bool] = []
    log_path = run.logs / f"relay-{uuid.uuid4().hex[:8]}.log"
    with log_path.open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "benchmarks.relay_process",
            "relay",
            cwd=REPO_ROOT,
            env=run.relay_environment(broker, configuration),
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
        )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), PROCESS_START_S)
        if line.decode().strip() != relay_process.RELAYING:
            raise RuntimeError(f"the relay process did not start (see {log_path})")
        yield dropped
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()
        dropped.append(SPANS_DROPPED in log_path.read_text(errors="replace"))


async def bare_rows_per_s(run: Run, broker: Broker, topic: str) -> float:
    """The bare producer's process: its rows/s, timed by itself once its records are made."""
    env = broker.environment(
        {
            "BENCH_TRACING": relay_process.TRACING_OFF,
            "BENCH_TOPIC": topic,
            "BENCH_BARE_ROWS": str(BURST_ROWS),
        }
    )
    with (run.logs / "bare.log").open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "benchmarks.relay_process",
            "bare",
            cwd=REPO_ROOT,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
        )
        output, _ = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"the bare producer failed with {process.returncode} (see {log.name})")
    return float(json.loads(output.decode().strip().splitlines()[-1])["rows_per_s"])


async def burst(
    run: Run, broker: Broker, configuration: Configuration, topic: str
) -> dict[str, float]:
    outbox = Outbox(broker.tables.outbox, "bench")
    with broker.as_client():
        receiver = Receiver(broker.bootstrap, topic)
    await receiver.start()
    committed: dict[str, float] = {}
    for _ in range(BURST_ROWS // 1000):
        committed |= await commit_rows(broker.sessions, outbox, topic, 1000)
    async with relaying(run, broker, configuration) as dropped:
        started = time.time()
        while await pending(broker.sessions, broker.tables):
            await asyncio.sleep(0.02)
        elapsed = time.time() - started
        await receiver.wait_for(BURST_ROWS)
    await receiver.stop()
    lat = latencies_ms(committed, receiver.arrived)
    return {
        "relay_rows_per_s": BURST_ROWS / elapsed,
        "p50_ms": statistics.median(lat),
        "p99_ms": percentile(lat, 0.99),
        "received": len(receiver.arrived),
        "spans_dropped": float(any(dropped)),
    }


async def bare(run: Run, broker: Broker, topic: str) -> float:
    """The bare producer's rows/s, with a receiver running as in the burst."""
    with broker.as_client():
        receiver = Receiver(broker.bootstrap, topic)
    await receiver.start()
    rate = await bare_rows_per_s(run, broker, topic)
    await receiver.wait_for(BURST_ROWS)
    await receiver.stop()
    return rate


async def steady(run: Run, broker: Broker, configuration: Configuration) -> float:
    outbox = Outbox(broker.tables.outbox, "bench")
    topic = broker.topics[f"steady-{configuration.name}"]
    with broker.as_client():
        receiver = Receiver(broker.bootstrap, topic)
    await receiver.start()
    committed: dict[str, float] = {}
    async with relaying(run, broker, configuration):
        tick, per_tick = 0.01, STEADY_RATE // 100
        started = time.time()
        for step in range(STEADY_SECONDS * 100):
            committed |= await commit_rows(broker.sessions, outbox, topic, per_tick)
            await asyncio.sleep(max(0.0, started + (step + 1) * tick - time.time()))
        await receiver.wait_for(len(committed), 60)
    await receiver.stop()
    return percentile(latencies_ms(committed, receiver.arrived), 0.99)


@contextlib.asynccontextmanager
async def prepared(
    label: str,
    bootstrap: str,
    secured: bool,
    pg_admin_dsn: str,
    configurations: Sequence[Configuration],
) -> AsyncIterator[Broker]:
    """A database of its own for the relay's outbox and this run's topics on the broker."""
    name = f"bench_relay_{uuid.uuid4().hex[:8]}"
    url = create_database(pg_admin_dsn, name).replace("postgresql://", "postgresql+psycopg://")
    metadata = MetaData()
    tables = add_eventing_tables(metadata)
    engine = db.make_engine(url)
    await create_tables(engine, metadata)
    prefix = f"bench{uuid.uuid4().hex[:6]}."
    names = ["warm", "bare-warm", *(f"steady-{c.name}" for c in configurations)] + [
        f"{kind}{i}" for i in range(ROUNDS) for kind in ("bare", *(c.name for c in configurations))
    ]
    topics = {topic: prefix + topic for topic in names}
    sessions = db.make_session_factory(engine)
    broker = Broker(label, bootstrap, secured, url, sessions, tables, topics, configurations)
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


async def measure(run: Run, brokers: list[Broker]) -> None:
    """Every broker gets one uncounted burst and bare run first (a broker started for this
    run has a cold JVM), then the rounds alternate between them, each configuration's relay
    then the bare producer, each round in the other order, so each sees the same machine."""
    for broker in brokers:
        await burst(run, broker, broker.configurations[0], broker.topics["warm"])
        await bare(run, broker, broker.topics["bare-warm"])
    for i in range(ROUNDS):
        # Each round starts with the other broker: the one measured second works while the
        # first still settles its own burst (flushes, the receiver's fetches).
        for broker in brokers if i % 2 == 0 else brokers[::-1]:
            order = broker.configurations if i % 2 == 0 else broker.configurations[::-1]
            for configuration in order:
                figures = await burst(
                    run, broker, configuration, broker.topics[f"{configuration.name}{i}"]
                )
                broker.rounds.setdefault(configuration.name, []).append(figures)
                dropped = "; SPANS DROPPED (the span queue was full)"
                print(
                    f"round {i + 1}, {broker.label}, {configuration.name}: relay "
                    f"{figures['relay_rows_per_s']:.0f} rows/s"
                    + (dropped if figures["spans_dropped"] else ""),
                    flush=True,
                )
            broker.bare_rounds.append(await bare(run, broker, broker.topics[f"bare{i}"]))
            print(
                f"round {i + 1}, {broker.label}: bare {broker.bare_rounds[-1]:.0f} rows/s",
                flush=True,
            )


async def summary(run: Run, broker: Broker, configuration: Configuration) -> dict[str, Any]:
    rounds = broker.rounds[configuration.name]

    def median(name: str) -> float:
        return statistics.median(r[name] for r in rounds)

    steady_p99 = await steady(run, broker, configuration)
    bare_rate = statistics.median(broker.bare_rounds)
    result = {
        "relay_rows_per_s": round(median("relay_rows_per_s"), 1),
        "bare_rows_per_s": round(bare_rate, 1),
        "ratio": round(median("relay_rows_per_s") / bare_rate, 3),
        "p50_ms": round(median("p50_ms"), 1),
        "p99_ms": round(median("p99_ms"), 1),
        "p99_ms_at_1000_rows_per_s": round(steady_p99, 1),
        "spans_dropped": any(r["spans_dropped"] for r in rounds),
    }
    print(
        f"{broker.label}, {configuration.name} ({configuration.says}): medians of {ROUNDS} "
        f"rounds of {BURST_ROWS} rows: relay {result['relay_rows_per_s']} rows/s, "
        f"bare producer {result['bare_rows_per_s']} rows/s, ratio {result['ratio']} "
        f"(target >= 0.5); burst commit-to-consume p50 {result['p50_ms']} ms, p99 "
        f"{result['p99_ms']} ms; steady {STEADY_RATE} rows/s for {STEADY_SECONDS}s: p99 "
        f"{steady_p99:.1f} ms"
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
    admin = infra.pg_admin_dsn
    with tempfile.TemporaryDirectory(prefix="bench-relay-") as logs:
        async with (
            running_collector(Path(logs)) as collector,
            open_broker() as open_bootstrap,
            prepared(SECURED, infra.kafka_bootstrap, True, admin, (PLATFORM, STRIPPED)) as secured,
            prepared(OPEN, open_bootstrap, False, admin, (STRIPPED,)) as without_security,
        ):
            run = Run(Path(logs), collector)
            await measure(run, [secured, without_security])
            result = await summary(run, secured, PLATFORM)
            stripped = await summary(run, secured, STRIPPED)
            without = await summary(run, without_security, STRIPPED)
            exported = SERVICE_NAME in await asyncio.to_thread(collector.services)
    ratios = {
        f"{key}_ratio_on_off": round(stripped[key] / without[key], 3)
        for key in ("relay_rows_per_s", "bare_rows_per_s")
        if without[key]
    }
    to_stripped = round(result["relay_rows_per_s"] / stripped["relay_rows_per_s"], 3)
    print(
        f"relay rows/s, platform over stripped: x{to_stripped}; Jaeger received the relay's "
        f"spans: {'yes' if exported else 'NO'}"
    )
    print(
        f"boundary on/off (stripped relay): relay rows/s "
        f"x{ratios.get('relay_rows_per_s_ratio_on_off')}, "
        f"bare producer x{ratios.get('bare_rows_per_s_ratio_on_off')}"
    )
    line = {
        **result,
        "configuration": PLATFORM.name,
        "traces_exported": exported,
        "stripped": stripped,
        "relay_rows_per_s_ratio_platform_to_stripped": to_stripped,
        "without_boundary": without,
        **ratios,
    }
    print(json.dumps(line))


if __name__ == "__main__":
    run_event_loop(main())
