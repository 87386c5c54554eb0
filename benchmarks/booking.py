"""Checkout throughput and the race for one slot, against pgbench on the same PostgreSQL,
in the platform's configuration and in a stripped one, side by side.

    make bench-booking      (.venv/bin/python -m benchmarks.booking)

Takes a migrated database and a topic prefix from the test infrastructure helpers and
starts the booking service as deploy/k8s/base/booking.yaml runs it: two replicas, each the
service's own process (`python -m services.booking`: uvloop, JSON logs, tracing, the
runtime role, the broker as its own principal, the relay and the other workers), serving
one port (gRPC binds it with SO_REUSEPORT), the kernel spreading ghz's connections over
them; each answers its own plaintext health port, as the kubelet probes it.
BENCH_REPLICAS=1 runs one. The replicas run in one of two configurations:

- **platform**: as `make up` and the manifests run them: every trace sampled and exported
  over OTLP to a Jaeger started for the run (benchmarks/jaeger.py), JSON logs at the
  default level, /metrics served, mutual TLS with every caller authorised. The figures
  users quote, and the JSON line's own keys.
- **stripped**: the same less trace export (spans are still made, and dropped) and less
  /metrics: what this benchmark measured before it measured the platform's; under
  `stripped` in the JSON line.
- **without_boundary**: the stripped one without mutual TLS or the callers' checks
  (servicekit.config.PLAINTEXT_SETTING), to show what the boundary costs; under
  `without_boundary`, with the on/off ratios.

In each round, each configuration in turn (each round in the other order) on a fresh
database and topics, with the collector running throughout:

1. ghz (the standard gRPC load generator, a native program like pgbench's own client, on
   one OS thread) makes 32 concurrent clients check out distinct slots by card;
2. ghz makes 200 callers race for one slot with 200 different keys: exactly one may win,
   whichever replica each caller reaches.

Then pgbench's TPC-B-like run, 32 clients at scale 10, on the same server. Prints each
round, the medians of each configuration's rounds, where the machine's CPU went during the
checkouts, the ratio of booking's CPU per checkout, platform over stripped, and the
boundary's on/off ratios; the last line is one JSON object.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import grpc
from liftfit.booking.v1 import booking_pb2 as pb
from liftfit.booking.v1 import events_pb2 as ev
from liftfit.booking.v1.booking_pb2_grpc import BookingServiceStub

from benchmarks import cpu as bench_cpu
from benchmarks import units
from benchmarks.configuration import SPANS_DROPPED, Configuration, deviations
from benchmarks.jaeger import Collector, running_collector
from benchmarks.stats import percentile
from servicekit import config
from servicekit.envelope import varint
from servicekit.protobuf import timestamp
from servicekit.runtime import run_event_loop
from tests.support import tls
from tests.support.infrastructure import (
    REPO_ROOT,
    Infrastructure,
    MigratedTemplates,
    create_database,
    drop_database,
    ensure_infrastructure,
)
from tests.support.platform import grant_kafka_access
from tests.support.processes import ServiceProcess, platform_settings
from tests.support.sandboxes import free_port
from tests.support.topics import create_topics, delete_topics

if TYPE_CHECKING:  # the async stub exists only in the type stubs
    from liftfit.booking.v1.booking_pb2_grpc import BookingServiceAsyncStub

CLIENTS = 32
RACERS = 200
REPLICAS = int(os.environ.get("BENCH_REPLICAS", "2"))  # deploy/k8s/base/booking.yaml's replicas
CONNECTIONS = 8  # ghz's connections, which the kernel spreads over the replicas
REPLICA_START_S = 60.0
CHECKOUTS = int(os.environ.get("BENCH_CHECKOUTS", "4000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
SECONDS = int(os.environ.get("BENCH_SECONDS", "10"))  # pgbench's run
PGBENCH = os.environ.get("PGBENCH", "/usr/lib/postgresql/15/bin/pgbench")
GHZ = Path(os.environ.get("GHZ", REPO_ROOT / ".local" / "bin" / "ghz"))
CHECKOUT = "liftfit.booking.v1.BookingService.Checkout"
TOPICS = {"booking.events": 3, "payment.events": 3, "access.events": 3}
THIS_PROCESS = "benchmark (this process)"


def ghz_credentials(principal: str = "gateway") -> list[str]:
    """ghz's mutual TLS as `principal` (the gateway: the one that may check out for a user)."""
    folder = Path(tls.folder(principal))
    return [
        f"--cacert={folder / 'ca.crt'}",
        f"--cert={folder / 'tls.crt'}",
        f"--key={folder / 'tls.key'}",
    ]


@dataclass(frozen=True)
class Run:
    """One ghz run: every answer's latency (seconds) and status, and how long it took;
    `ended`, the machine's CPU counters as ghz exited, before its report was read."""

    latencies: list[float]
    statuses: list[str]
    elapsed: float
    ended: bench_cpu.CpuSample | None = None

    def percentile_ms(self, share: float) -> float:
        return percentile(self.latencies, share) * 1000


async def _ghz(
    target: str,
    requests: Sequence[pb.CheckoutRequest],
    *args: str,
    names: Mapping[int, str] | None = None,
    boundary: bool = True,
) -> Run:
    """Runs ghz against the service's Checkout; each call sends the next request.

    The requests reach ghz as protobuf, count-prefixed, not as JSON: ghz decodes them
    once, where JSON data is decoded again for every call the first time it is used
    (each of the 4,000 checkouts). `names` name processes in `ended` (bench_cpu.sample).
    """
    with tempfile.NamedTemporaryFile("wb", suffix=".bin", delete=False) as data_file:
        for request in requests:
            body = request.SerializeToString()
            data_file.write(varint(len(body)) + body)
    command = [
        str(GHZ),
        *(ghz_credentials() if boundary else ["--insecure"]),
        f"--proto={REPO_ROOT / 'protos' / 'liftfit' / 'booking' / 'v1' / 'booking.proto'}",
        f"--import-paths={REPO_ROOT / 'protos'}",
        f"--call={CHECKOUT}",
        f"--binary-file={data_file.name}",
        "--format=json",
        "--skipFirst=0",
        # One OS thread, as pgbench runs each of its own: Go's scheduler on two threads
        # spent a quarter more CPU per call on these cores.
        "--cpus=1",
        f"--connections={CONNECTIONS}",
        *args,
        target,
    ]
    process = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE)
    output, _ = await process.communicate()
    ended = bench_cpu.sample(names=names)  # before this process reads the report
    os.unlink(data_file.name)
    if process.returncode not in (0, 1):  # 1: some calls were refused, as the race expects
        raise RuntimeError(f"ghz failed with {process.returncode}")
    report = json.loads(output)
    details = report.get("details") or []
    return Run(
        latencies=[item["latency"] / 1e9 for item in details],
        statuses=[item["status"] for item in details],
        elapsed=report["total"] / 1e9,
        ended=ended,
    )


def _checkout(org: str, slot_id: str, key: str) -> pb.CheckoutRequest:
    return pb.CheckoutRequest(
        org_id=org,
        user="bench",
        idempotency_key=key,
        slot_id=slot_id,
        party_size=1,
        payment_mode="card",
    )


async def _create_slots(stub: BookingServiceAsyncStub, count: int) -> list[str]:
    space = await stub.CreateSpace(pb.CreateSpaceRequest(name="bench", timezone="UTC"))
    # Slots are sold only before they start.
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(days=7)
    slot_ids: list[str] = []
    for first in range(0, count, 2000):
        new = [
            pb.NewSlot(
                starts_at=timestamp(start + timedelta(hours=i)),
                ends_at=timestamp(start + timedelta(hours=i + 1)),
                price=ev.Money(amount=45000, currency="CZK"),
            )
            for i in range(first, min(first + 2000, count))
        ]
        created = await stub.CreateSlots(pb.CreateSlotsRequest(space_id=space.space_id, slots=new))
        slot_ids += [slot.slot_id for slot in created.slots]
    return slot_ids


def _replica_environment(shared: Shared, configured: Mapping[str, str]) -> dict[str, str]:
    """The settings as a replica's process reads them from its environment: this run's
    database, topics and address, platform.env's password of the booking principal at the
    broker, and the configuration's settings. What neither names
    keeps the service's default, as platform.env and the manifests leave it (LOG_LEVEL:
    INFO; OTEL_TRACES_SAMPLER: every trace; BOOKING_DB_POOL_SIZE: 16)."""
    inherited = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("OTEL_", "LOG_LEVEL", "BOOKING_"))
    }
    return {
        **inherited,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "build" / "gen")]),
        "BOOKING_DATABASE_URL": shared.database_url,
        "KAFKA_BOOTSTRAP": shared.kafka_bootstrap,
        "BOOKING_KAFKA_PASSWORD": platform_settings()["BOOKING_KAFKA_PASSWORD"],
        "BOOKING_GRPC_ADDRESS": shared.address,
        "BOOKING_HEALTH_ADDRESS": f"127.0.0.1:{free_port()}",
        "TOPIC_PREFIX": shared.topic_prefix,
        "BOOKING_IDEMPOTENCY_SECRET": shared.idempotency_secret,
        **configured,
    }


def _address() -> str:
    return f"127.0.0.1:{free_port()}"


def _secret() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class Shared:
    """What the replicas of one measurement share: the database, the topics, the gRPC
    address they all serve and the idempotency secret."""

    database_url: str
    kafka_bootstrap: str
    topic_prefix: str
    address: str = field(default_factory=_address)
    idempotency_secret: str = field(default_factory=_secret)


def _configured(configuration: Configuration, collector: Collector) -> dict[str, str]:
    """The configuration's settings for one replica: traces, metrics (a /metrics port of
    its own: below the ephemeral range, never a bind to port 0) and the boundary."""
    metrics = f"127.0.0.1:{free_port()}" if configuration.platform else ""
    boundary = (
        {"BOOKING_TLS_DIR": tls.folder("booking")}
        if configuration.boundary
        else {config.PLAINTEXT_SETTING: config.PLAINTEXT_VALUE}
    )
    return {
        **configuration.traces(collector.otlp_endpoint),
        "BOOKING_METRICS_ADDRESS": metrics,
        **boundary,
    }


PLATFORM = Configuration(
    "platform",
    "as make up and deploy/k8s run it: every trace exported over OTLP to Jaeger, JSON logs "
    "at INFO, /metrics served, mutual TLS",
    platform=True,
)
STRIPPED = Configuration(
    "stripped",
    "stripped, for comparison only: no trace export (spans made and dropped), no /metrics; "
    "JSON logs at INFO, mutual TLS",
    platform=False,
)
WITHOUT_BOUNDARY = Configuration(
    "without_boundary",
    "stripped and without the boundary, for comparison only: LIFTFIT_GRPC_PLAINTEXT, which "
    "no manifest sets (no mutual TLS, no caller checks)",
    platform=False,
    boundary=False,
)
CONFIGURATIONS = (PLATFORM, STRIPPED, WITHOUT_BOUNDARY)


@asynccontextmanager
async def _replicas(
    shared: Shared,
    configuration: Configuration,
    collector: Collector,
    logs: Path,
    pythons: Sequence[str] = (),
) -> AsyncIterator[list[ServiceProcess]]:
    """Starts the replicas, each the service's own process serving `shared.address`,
    one after another, each watched on its own health port; yields them. Replica i runs
    on `pythons[i]` when given (benchmarks.interpreters), else on this interpreter."""
    started: list[ServiceProcess] = []
    try:
        for number in range(max(REPLICAS, len(pythons))):
            env = _replica_environment(shared, _configured(configuration, collector))
            if configuration.platform and (problems := deviations(env, ["booking"], ["booking"])):
                raise SystemExit("not the platform's own configuration: " + "; ".join(problems))
            python = pythons[number] if number < len(pythons) else ""
            replica = ServiceProcess("booking", env, Path(tempfile.mkdtemp(dir=logs)), python)
            started.append(replica)
            await replica.restart(REPLICA_START_S)
        yield started
    finally:
        for replica in started:
            if replica.alive:
                await replica.stop()


def _dropped_spans(replica: ServiceProcess) -> bool:
    """Whether the replica's span processor dropped spans, its queue full: exported spans
    would then cost less than every trace's, and the figure would flatter the platform."""
    return any(SPANS_DROPPED in line for line in replica.log_lines())


@dataclass(frozen=True)
class ReplicaShare:
    """One replica's part of the checkouts, read from its own /metrics and /proc."""

    python: str
    checkouts: int
    cpu_ms: float

    @property
    def cpu_ms_per_checkout(self) -> float:
        return self.cpu_ms / self.checkouts if self.checkouts else 0.0


@dataclass(frozen=True)
class CheckoutFigures:
    checkouts: Run
    race: Run
    cpu: bench_cpu.Spent | None
    spans_dropped: bool = False
    replicas: tuple[ReplicaShare, ...] = ()  # with /metrics served (the platform's)

    @property
    def rate(self) -> float:
        return sum(status == "OK" for status in self.checkouts.statuses) / self.checkouts.elapsed

    @property
    def booking_cpu_ms(self) -> float:
        return self.cpu.ms_per_unit.get(bench_cpu.SELF, 0.0) if self.cpu else 0.0


async def measure_checkouts(
    database_url: str,
    infra: Infrastructure,
    configuration: Configuration,
    collector: Collector,
    logs: Path,
    pythons: Sequence[str] = (),
) -> CheckoutFigures:
    """One configuration's checkouts and race, on topics of their own; the replicas on
    `pythons` when given (see _replicas)."""
    prefix = await create_topics(infra.kafka_bootstrap, TOPICS)
    try:
        await grant_kafka_access(infra, prefix)  # booking's ACLs, as make up's broker has them
        shared = Shared(
            database_url.replace("postgresql://", "postgresql+psycopg://", 1),
            infra.kafka_bootstrap,
            prefix,
        )
        async with _replicas(shared, configuration, collector, logs, pythons) as replicas:
            figures = await _measure_with(shared.address, replicas, configuration.boundary)
        return replace(figures, spans_dropped=any(map(_dropped_spans, replicas)))
    finally:
        # Deleted, as the tests delete theirs: every run used to leave its nine partitions
        # on the broker, and a broker holding hundreds of them answered the relay's steady
        # load later and less evenly.
        await delete_topics(infra.kafka_bootstrap, prefix, list(TOPICS))


async def _measure_with(
    target: str, replicas: Sequence[ServiceProcess], boundary: bool
) -> CheckoutFigures:
    names = {r.pid: bench_cpu.SELF for r in replicas} | {os.getpid(): THIS_PROCESS}
    channel = tls.channel(target) if boundary else grpc.aio.insecure_channel(target)
    try:
        slots = await _create_slots(BookingServiceStub(channel), CHECKOUTS + 1)
    finally:
        await channel.close(grace=None)
    org = str(uuid.uuid4())
    data = [_checkout(org, slot, f"k-{i}") for i, slot in enumerate(slots[:CHECKOUTS])]
    answered = await _calls_answered(replicas)
    before = bench_cpu.sample(names=names)
    load = (f"--concurrency={CLIENTS}", f"--total={CHECKOUTS}")
    checkouts = await _ghz(target, data, *load, names=names, boundary=boundary)
    cpu = bench_cpu.spent(before, checkouts.ended, len(checkouts.latencies))
    counted = await _calls_answered(replicas)
    shares = _shares(replicas, answered, counted, before, checkouts.ended)
    racers = [_checkout(org, slots[-1], f"race-{i}") for i in range(RACERS)]
    racing = (f"--concurrency={RACERS}", f"--total={RACERS}")
    race = await _ghz(target, racers, *racing, boundary=boundary)
    return CheckoutFigures(checkouts, race, cpu, replicas=shares)


async def _calls_answered(replicas: Sequence[ServiceProcess]) -> list[float] | None:
    """Each replica's gRPC calls answered so far, as its /metrics counts them (read as
    bench-saga reads the parts', benchmarks/units.py): between two readings around the
    checkouts' load, its checkouts. None without /metrics (the stripped configurations)."""
    addresses = [r.env.get("BOOKING_METRICS_ADDRESS", "") for r in replicas]
    if not all(addresses):
        return None
    return [(await units.read([f"http://{a}/metrics"]))["grpc_calls"] for a in addresses]


def _shares(
    replicas: Sequence[ServiceProcess],
    answered: list[float] | None,
    counted: list[float] | None,
    before: bench_cpu.CpuSample | None,
    after: bench_cpu.CpuSample | None,
) -> tuple[ReplicaShare, ...]:
    """Each replica's checkouts and CPU between the two samples (the checkouts' load)."""
    if answered is None or counted is None or before is None or after is None:
        return ()
    return tuple(
        ReplicaShare(replica.python, round(c - a), bench_cpu.process_ms(before, after, replica.pid))
        for replica, a, c in zip(replicas, answered, counted, strict=True)
    )


def pgbench_on_a_new_database(admin_dsn: str) -> float:
    """pgbench's tps on a database of its own, made for the run and dropped after it."""
    database = f"bench_pgbench_{uuid.uuid4().hex[:8]}"
    try:
        return measure_pgbench(create_database(admin_dsn, database))
    finally:
        drop_database(admin_dsn, database)


def measure_pgbench(database_url: str) -> float:
    parts = urlsplit(database_url)
    env = {**os.environ, "PGPASSWORD": parts.password or ""}
    common = ["-h", parts.hostname or "", "-p", str(parts.port or 5432), "-U", parts.username or ""]
    name = parts.path.lstrip("/")
    subprocess.run(
        [PGBENCH, "-i", "-q", "-s", "10", *common, name], env=env, check=True, capture_output=True
    )
    run = [PGBENCH, "-c", "32", "-j", "2", "-T", str(SECONDS), *common, name]
    output = subprocess.run(run, env=env, check=True, capture_output=True, text=True).stdout
    match = re.search(r"tps = ([0-9.]+)", output)
    if match is None:
        raise RuntimeError(f"pgbench printed no tps:\n{output}")
    return float(match.group(1))


def _print_round(number: int, configuration: Configuration, figures: CheckoutFigures) -> None:
    checkouts, race = figures.checkouts, figures.race
    ok = sum(status == "OK" for status in checkouts.statuses)
    winners = sum(status == "OK" for status in race.statuses)
    print(
        f"round {number}, {configuration.name}: {figures.rate:.0f} checkouts/s ({ok} of "
        f"{len(checkouts.statuses)} OK), p50 {checkouts.percentile_ms(0.5):.1f} ms, p99 "
        f"{checkouts.percentile_ms(0.99):.1f} ms; booking CPU {figures.booking_cpu_ms:.2f} ms "
        f"per checkout; race: {winners} winner(s) of {RACERS}, p99 "
        f"{race.percentile_ms(0.99):.1f} ms"
        + ("; SPANS DROPPED (the span queue was full)" if figures.spans_dropped else ""),
        flush=True,
    )
    if figures.cpu is not None:
        print(f"  {figures.cpu}", flush=True)
    for number, share in enumerate(figures.replicas, 1):  # the first started leads the relay
        print(
            f"  replica {number} ({share.python}): {share.checkouts} checkouts, "
            f"{share.cpu_ms_per_checkout:.2f} ms of its CPU each",
            flush=True,
        )


def summarise(rounds: Sequence[CheckoutFigures], tps: float) -> dict[str, Any]:
    """The medians of one configuration's rounds, each round's own figures beside them;
    the race's winners are the most any round had (one, if the slot was never oversold)."""
    rate = statistics.median(r.rate for r in rounds)
    booking_cpu = statistics.median(r.booking_cpu_ms for r in rounds)
    return {
        "checkouts_per_s": round(rate, 1),
        "p50_ms": round(statistics.median(r.checkouts.percentile_ms(0.5) for r in rounds), 2),
        "p99_ms": round(statistics.median(r.checkouts.percentile_ms(0.99) for r in rounds), 2),
        "pgbench_tps": round(tps, 1),
        "ratio": round(rate / tps, 3),
        "booking_cpu_ms_per_checkout": round(booking_cpu, 2),
        "booking_cpu_ms_per_round": [round(r.booking_cpu_ms, 2) for r in rounds],
        "checkouts_per_s_per_round": [round(r.rate, 1) for r in rounds],
        "race_p99_ms": round(statistics.median(r.race.percentile_ms(0.99) for r in rounds), 1),
        "race_winners": max(sum(s == "OK" for s in r.race.statuses) for r in rounds),
        "spans_dropped": any(r.spans_dropped for r in rounds),
    }


def _print_summary(configuration: Configuration, figures: dict[str, Any]) -> None:
    print(f"== {configuration.name}: {configuration.says}")
    print(
        f"  medians of {ROUNDS} rounds, {CLIENTS} clients, distinct slots, {REPLICAS} "
        f"replica(s): {figures['checkouts_per_s']:.0f} checkouts/s, p50 {figures['p50_ms']} "
        f"ms, p99 {figures['p99_ms']} ms; ratio checkout/pgbench {figures['ratio']:.3f} "
        f"(target >= 0.3); booking CPU per checkout {figures['booking_cpu_ms_per_checkout']} "
        f"ms (target <= 2.0); race p99 {figures['race_p99_ms']} ms, winners "
        f"{figures['race_winners']}"
    )


async def _rounds(
    infra: Infrastructure, templates: MigratedTemplates, collector: Collector, logs: Path
) -> dict[str, list[CheckoutFigures]]:
    """ROUNDS rounds, each configuration once in each, the order turned every round, so
    that each sees the same machine."""
    figures: dict[str, list[CheckoutFigures]] = {c.name: [] for c in CONFIGURATIONS}
    for number in range(1, ROUNDS + 1):
        order = CONFIGURATIONS if number % 2 else CONFIGURATIONS[::-1]
        for configuration in order:
            name = f"bench_booking_{configuration.name}_{uuid.uuid4().hex[:8]}"
            try:
                url = templates.database("booking", name)
                measured = await measure_checkouts(url, infra, configuration, collector, logs)
            finally:
                drop_database(infra.pg_admin_dsn, name)
            _print_round(number, configuration, measured)
            figures[configuration.name].append(measured)
    return figures


def cpu_ratios(
    platform: Sequence[CheckoutFigures], stripped: Sequence[CheckoutFigures]
) -> tuple[float, list[float]]:
    """Booking's CPU per checkout, platform over stripped: the medians' ratio, and each
    round's, whose two measurements ran one right after the other."""
    medians = statistics.median(r.booking_cpu_ms for r in platform) / statistics.median(
        r.booking_cpu_ms for r in stripped
    )
    per_round = [
        round(p.booking_cpu_ms / s.booking_cpu_ms, 3)
        for p, s in zip(platform, stripped, strict=True)
        if s.booking_cpu_ms
    ]
    return medians, per_round


def boundary_ratios(on: dict[str, Any], off: dict[str, Any]) -> dict[str, float]:
    """What the boundary costs, both configurations stripped: on over off."""
    return {
        f"{key}_ratio_on_off": round(on[key] / off[key], 3)
        for key in ("checkouts_per_s", "booking_cpu_ms_per_checkout")
        if off[key]
    }


async def _measure(infra: Infrastructure, templates: MigratedTemplates) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-booking-") as folder:
        logs = Path(folder)
        async with running_collector(logs) as collector:
            print(f"Jaeger {collector.otlp_endpoint} (pid {collector.pid})", flush=True)
            rounds = await _rounds(infra, templates, collector, logs)
            exported = "booking" in await asyncio.to_thread(collector.services)
    tps = pgbench_on_a_new_database(infra.pg_admin_dsn)
    print(f"pgbench TPC-B-like, 32 clients, scale 10: {tps:.0f} tps")
    summary = summarise(rounds[PLATFORM.name], tps)
    stripped = summarise(rounds[STRIPPED.name], tps)
    without = summarise(rounds[WITHOUT_BOUNDARY.name], tps)
    for configuration, figures in zip(CONFIGURATIONS, (summary, stripped, without), strict=True):
        _print_summary(configuration, figures)
    cpu_ratio, per_round = cpu_ratios(rounds[PLATFORM.name], rounds[STRIPPED.name])
    print(
        f"booking CPU per checkout, platform over stripped: {cpu_ratio:.3f} (target <= 1.3); "
        f"Jaeger received booking's spans: {'yes' if exported else 'NO'}"
    )
    on_off = boundary_ratios(stripped, without)
    print(
        f"boundary on/off (both stripped): checkouts/s x{on_off['checkouts_per_s_ratio_on_off']}, "
        f"booking CPU per checkout x{on_off['booking_cpu_ms_per_checkout_ratio_on_off']}"
    )
    summary |= {
        "configuration": PLATFORM.name,
        "traces_exported": exported,
        "stripped": stripped,
        "booking_cpu_ratio_platform_to_stripped": round(cpu_ratio, 3),
        "booking_cpu_ratio_per_round": per_round,
        "without_boundary": without,
        **on_off,
    }
    print(json.dumps(summary))


def main() -> None:
    if not GHZ.exists():
        raise SystemExit(f"{GHZ} is missing: `make bench-booking` builds it")
    if not Collector.built():
        raise SystemExit("the Jaeger program is missing: `make bench-booking` builds it")
    infra = ensure_infrastructure()
    templates = MigratedTemplates(infra.pg_admin_dsn)
    try:
        run_event_loop(_measure(infra, templates))
    finally:
        templates.drop_all()


if __name__ == "__main__":
    main()
