"""Checkout throughput and the race for one slot, against pgbench on the same PostgreSQL.

    make bench-booking      (.venv/bin/python -m benchmarks.booking)

Takes a migrated database and a topic prefix from the test infrastructure helpers and
starts the booking service as deploy/k8s/base/booking.yaml runs it: two replicas (uvloop,
tracing, the runtime role, the relay and the other workers included), one in this process,
the other the service's own process (`python -m services.booking`, its log in a temporary
folder). Both serve one port (gRPC binds it with SO_REUSEPORT), and the kernel spreads ghz's
connections over them. BENCH_REPLICAS=1 runs the service in this process alone. Then:

1. ghz (the standard gRPC load generator, a native program like pgbench's own client, on
   one OS thread) makes 32 concurrent clients check out distinct slots by card;
2. ghz makes 200 callers race for one slot with 200 different keys: exactly one may win,
   whichever replica each caller reaches;
3. pgbench's TPC-B-like run, 32 clients at scale 10, on the same server right after.

Prints the figures and where the machine's CPU went during the checkout phase; the last
line is one JSON object.
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
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import grpc
from liftfit.booking.v1 import booking_pb2 as pb
from liftfit.booking.v1 import events_pb2 as ev
from liftfit.booking.v1.booking_pb2_grpc import BookingServiceStub

from benchmarks import cpu as bench_cpu
from benchmarks.stats import percentile
from servicekit import config
from servicekit.envelope import varint
from servicekit.protobuf import timestamp
from servicekit.runtime import run_event_loop, settle_garbage_collector
from servicekit.tracing import configure_tracing
from services.booking.bootstrap import bootstrap
from services.booking.settings import Settings
from tests.support import tls
from tests.support.infrastructure import (
    REPO_ROOT,
    MigratedTemplates,
    create_database,
    drop_database,
    ensure_infrastructure,
)
from tests.support.processes import ServiceProcess
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
SECONDS = int(os.environ.get("BENCH_SECONDS", "10"))  # pgbench's run
PGBENCH = os.environ.get("PGBENCH", "/usr/lib/postgresql/15/bin/pgbench")
GHZ = Path(os.environ.get("GHZ", REPO_ROOT / ".local" / "bin" / "ghz"))
CHECKOUT = "liftfit.booking.v1.BookingService.Checkout"


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
    replicas: Sequence[int] = (),
    boundary: bool = True,
) -> Run:
    """Runs ghz against the service's Checkout; each call sends the next request.

    The requests reach ghz as protobuf, count-prefixed, not as JSON: ghz decodes them
    once, where JSON data is decoded again for every call the first time it is used
    (each of the 4,000 checkouts). `replicas` are counted as this process in `ended`.
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
    ended = bench_cpu.sample(replicas)  # before this process reads the report
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


def _replica_environment(settings: Settings) -> dict[str, str]:
    """The settings as the service's process reads them from its environment."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "build" / "gen")]),
        "BOOKING_DATABASE_URL": settings.database_url,
        "KAFKA_BOOTSTRAP": settings.kafka_bootstrap,
        "BOOKING_GRPC_ADDRESS": settings.grpc_address,
        **(
            {"BOOKING_TLS_DIR": settings.tls_dir}
            if settings.tls_dir
            else {config.PLAINTEXT_SETTING: config.PLAINTEXT_VALUE}
        ),
        "TOPIC_PREFIX": settings.topic_prefix,
        "BOOKING_IDEMPOTENCY_SECRET": settings.idempotency_secret.decode(),
        "BOOKING_HOLD_SECONDS": str(settings.hold_seconds),
        "BOOKING_TERMS_VERSION": settings.terms_version,
        "BOOKING_DB_POOL_SIZE": str(settings.db_pool_size),
        "BOOKING_METRICS_ADDRESS": settings.metrics_address,
    }


@asynccontextmanager
async def _other_replicas(settings: Settings, count: int) -> AsyncIterator[list[int]]:
    """Starts `count` more replicas, each the service's own process (`python -m
    services.booking`), serving `settings.grpc_address`; yields their pids. They start
    before this process serves that address, so each one's health check reaches itself."""
    with tempfile.TemporaryDirectory(prefix="bench-replicas-") as logs:
        started: list[ServiceProcess] = []
        try:
            for _ in range(count):
                log_dir = Path(tempfile.mkdtemp(dir=logs))
                replica = ServiceProcess("booking", _replica_environment(settings), log_dir)
                started.append(replica)
                await replica.restart(REPLICA_START_S)
            yield [replica.pid for replica in started]
        finally:
            for replica in started:
                if replica.alive:
                    await replica.stop()


@dataclass(frozen=True)
class CheckoutFigures:
    checkouts: Run
    race: Run
    cpu: bench_cpu.Spent | None


async def measure_checkouts(
    database_url: str, kafka: str, boundary: bool = True
) -> CheckoutFigures:
    """The checkouts with the platform's boundary (mutual TLS, each caller authorised), or,
    to show its cost, without (servicekit.config.PLAINTEXT_SETTING)."""
    topics = {"booking.events": 3, "payment.events": 3, "access.events": 3}
    prefix = await create_topics(kafka, topics)
    try:
        return await _measure_on(database_url, kafka, prefix, boundary)
    finally:
        # Deleted, as the tests delete theirs: every run used to leave its nine partitions
        # on the broker, and a broker holding hundreds of them answered the relay's steady
        # load later and less evenly.
        await delete_topics(kafka, prefix, list(topics))


async def _measure_on(
    database_url: str, kafka: str, prefix: str, boundary: bool
) -> CheckoutFigures:
    settings = Settings(
        database_url=database_url.replace("postgresql://", "postgresql+psycopg://", 1),
        kafka_bootstrap=kafka,
        grpc_address=f"127.0.0.1:{free_port()}",  # shared by the replicas
        tls_dir=tls.folder("booking") if boundary else "",
        topic_prefix=prefix,
        idempotency_secret=uuid.uuid4().hex.encode(),
        hold_seconds=900,
        terms_version="2026-11",
        db_pool_size=CLIENTS,
    )
    async with _other_replicas(settings, REPLICAS - 1) as replicas:
        return await _measure_with(settings, replicas)


async def _measure_with(settings: Settings, replicas: list[int]) -> CheckoutFigures:
    app = bootstrap(settings)
    await app.start()
    settle_garbage_collector()  # as the service's process does once started
    boundary = bool(settings.tls_dir)
    grpc_channel = (
        tls.channel(app.grpc_target) if boundary else grpc.aio.insecure_channel(app.grpc_target)
    )
    try:
        slots = await _create_slots(BookingServiceStub(grpc_channel), CHECKOUTS + 1)
        org = str(uuid.uuid4())
        data = [_checkout(org, slot, f"k-{i}") for i, slot in enumerate(slots[:CHECKOUTS])]
        before = bench_cpu.sample(replicas)
        load = (f"--concurrency={CLIENTS}", f"--total={CHECKOUTS}")
        checkouts = await _ghz(app.grpc_target, data, *load, replicas=replicas, boundary=boundary)
        cpu = bench_cpu.spent(before, checkouts.ended, len(checkouts.latencies))
        racers = [_checkout(org, slots[-1], f"race-{i}") for i in range(RACERS)]
        load = (f"--concurrency={RACERS}", f"--total={RACERS}")
        race = await _ghz(app.grpc_target, racers, *load, boundary=boundary)
    finally:
        await grpc_channel.close(grace=None)
        await app.stop()
    return CheckoutFigures(checkouts, race, cpu)


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


def _print_and_summarise(figures: CheckoutFigures, tps: float) -> dict[str, float | int]:
    checkouts, race = figures.checkouts, figures.race
    ok = sum(status == "OK" for status in checkouts.statuses)
    rate = ok / checkouts.elapsed
    winners = sum(status == "OK" for status in race.statuses)
    print(
        f"checkout over gRPC (ghz), {CLIENTS} clients, distinct slots, {REPLICAS} "
        f"replica(s): {rate:.0f}/s"
    )
    print(
        f"  {ok} of {len(checkouts.statuses)} OK; latency p50 "
        f"{checkouts.percentile_ms(0.5):.1f} ms, p99 {checkouts.percentile_ms(0.99):.1f} ms"
    )
    booking_cpu = 0.0
    if figures.cpu is not None:
        print(f"  {figures.cpu}")
        booking_cpu = figures.cpu.ms_per_unit.get(bench_cpu.SELF, 0.0)
    print(
        f"race: {RACERS} callers for one slot: {winners} winner(s); latency of every answer "
        f"p50 {race.percentile_ms(0.5):.1f} ms, p99 {race.percentile_ms(0.99):.1f} ms "
        f"(median {statistics.median(race.latencies) * 1000:.1f} ms)"
    )
    print(f"pgbench TPC-B-like, 32 clients, scale 10: {tps:.0f} tps")
    ratio = rate / tps
    print(
        f"ratio checkout/pgbench: {ratio:.2f} (target >= 0.3); booking CPU per checkout "
        f"{booking_cpu:.2f} ms (target <= 2.0)"
    )
    return {
        "checkouts_per_s": round(rate, 1),
        "p50_ms": round(checkouts.percentile_ms(0.5), 2),
        "p99_ms": round(checkouts.percentile_ms(0.99), 2),
        "pgbench_tps": round(tps, 1),
        "ratio": round(ratio, 3),
        "booking_cpu_ms_per_checkout": round(booking_cpu, 2),
        "race_p99_ms": round(race.percentile_ms(0.99), 1),
        "race_winners": winners,
    }


async def _measure(infra_dsn: str, kafka: str, templates: MigratedTemplates) -> None:
    """The platform's configuration (the boundary on), then the same without the boundary,
    side by side on one machine, one pgbench run for both."""
    suffix = uuid.uuid4().hex[:8]
    on_db, off_db = f"bench_booking_{suffix}", f"bench_booking_off_{suffix}"
    pgbench_db = f"bench_pgbench_{suffix}"
    try:
        on = await measure_checkouts(templates.database("booking", on_db), kafka)
        off = await measure_checkouts(templates.database("booking", off_db), kafka, False)
        tps = measure_pgbench(create_database(infra_dsn, pgbench_db))
    finally:
        for name in (on_db, off_db, pgbench_db):
            drop_database(infra_dsn, name)
    print("== with the boundary (mutual TLS, every caller authorised): the platform's")
    summary = _print_and_summarise(on, tps)
    print("== without it (LIFTFIT_GRPC_PLAINTEXT, for this comparison only)")
    without = _print_and_summarise(off, tps)
    summary["without_boundary"] = without  # type: ignore[assignment]
    for key in ("checkouts_per_s", "booking_cpu_ms_per_checkout"):
        if without[key]:
            summary[f"{key}_ratio_on_off"] = round(summary[key] / without[key], 3)
    print(
        f"boundary on/off: checkouts/s x{summary.get('checkouts_per_s_ratio_on_off')}, "
        f"booking CPU per checkout x{summary.get('booking_cpu_ms_per_checkout_ratio_on_off')}"
    )
    print(json.dumps(summary))


def main() -> None:
    if not GHZ.exists():
        raise SystemExit(f"{GHZ} is missing: `make bench-booking` builds it")
    # As the service's process does: spans are recorded (exported where
    # OTEL_TRACES_EXPORTER says), so every booking carries its trace id.
    configure_tracing("booking")
    infra = ensure_infrastructure()
    templates = MigratedTemplates(infra.pg_admin_dsn)
    try:
        run_event_loop(_measure(infra.pg_admin_dsn, infra.kafka_bootstrap, templates))
    finally:
        templates.drop_all()


if __name__ == "__main__":
    main()
