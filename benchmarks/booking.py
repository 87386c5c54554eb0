"""Checkout throughput over gRPC against pgbench's TPC-B-like baseline on the same server.

    make bench-booking      (.venv/bin/python -m benchmarks.booking)

Takes a migrated database and a topic prefix from the test infrastructure helpers, starts
the booking service in-process (as the runtime role, like production), runs
32 concurrent clients checking out distinct slots for ~10 s, then runs pgbench on the
same PostgreSQL. Prints the figures; the last line is one JSON object.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from liftfit.booking.v1 import booking_pb2 as pb
from liftfit.booking.v1 import events_pb2 as ev
from liftfit.booking.v1.booking_pb2_grpc import BookingServiceStub

from benchmarks import cpu as bench_cpu
from servicekit.grpc_server import channel
from servicekit.protobuf import timestamp
from services.booking.bootstrap import bootstrap
from services.booking.settings import Settings
from tests.support.infrastructure import (
    MigratedTemplates,
    create_database,
    drop_database,
    ensure_infrastructure,
)
from tests.support.topics import create_topics

if TYPE_CHECKING:  # the async stub exists only in the type stubs
    from liftfit.booking.v1.booking_pb2_grpc import BookingServiceAsyncStub

CLIENTS = 32
SECONDS = float(os.environ.get("BENCH_SECONDS", "10"))
SLOTS = int(os.environ.get("BENCH_SLOTS", "40000"))
PGBENCH = os.environ.get("PGBENCH", "/usr/lib/postgresql/15/bin/pgbench")


@dataclass(frozen=True)
class CheckoutFigures:
    checkouts_per_s: float
    p50_ms: float
    p99_ms: float
    cpu: str  # where the machine's CPU went meanwhile (bench_cpu)


async def _create_slots(stub: BookingServiceAsyncStub) -> list[str]:
    space = await stub.CreateSpace(pb.CreateSpaceRequest(name="bench", timezone="UTC"))
    # Slots are sold only before they start.
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(days=7)
    slot_ids: list[str] = []
    for first in range(0, SLOTS, 2000):
        new = [
            pb.NewSlot(
                starts_at=timestamp(start + timedelta(hours=i)),
                ends_at=timestamp(start + timedelta(hours=i + 1)),
                price=ev.Money(amount=45000, currency="CZK"),
            )
            for i in range(first, min(first + 2000, SLOTS))
        ]
        created = await stub.CreateSlots(pb.CreateSlotsRequest(space_id=space.space_id, slots=new))
        slot_ids += [slot.slot_id for slot in created.slots]
    return slot_ids


async def _run_clients(target: str, slots: list[str]) -> tuple[list[float], float]:
    """Runs the clients in another process; returns their latencies and the elapsed time."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as slots_file:
        json.dump(slots, slots_file)
    clients = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "benchmarks.booking_clients",
        target,
        str(SECONDS),
        slots_file.name,
        stdout=asyncio.subprocess.PIPE,
    )
    output, _ = await clients.communicate()
    os.unlink(slots_file.name)
    if clients.returncode != 0:
        raise RuntimeError(f"benchmark clients failed with {clients.returncode}")
    figures = json.loads(output)
    return list(figures["latencies"]), float(figures["elapsed"])


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000


async def measure_checkouts(database_url: str, kafka: str) -> CheckoutFigures:
    topics = {"booking.events": 3, "payment.events": 3, "access.events": 3}
    settings = Settings(
        database_url=database_url.replace("postgresql://", "postgresql+psycopg://", 1),
        kafka_bootstrap=kafka,
        grpc_address="127.0.0.1:0",
        topic_prefix=await create_topics(kafka, topics),
        idempotency_secret=uuid.uuid4().hex.encode(),
        hold_seconds=900,
        terms_version="2026-11",
        db_pool_size=CLIENTS,
    )
    app = bootstrap(settings)
    await app.start()
    grpc_channel = channel(app.grpc_target)
    try:
        stub = BookingServiceStub(grpc_channel)
        slots = await _create_slots(stub)
        before = bench_cpu.sample()
        latencies, elapsed = await _run_clients(app.grpc_target, slots)
        cpu = bench_cpu.report(before, bench_cpu.sample(), elapsed, len(latencies))
    finally:
        await grpc_channel.close(grace=None)
        await app.stop()
    return CheckoutFigures(
        len(latencies) / elapsed, _percentile(latencies, 0.5), _percentile(latencies, 0.99), cpu
    )


def measure_pgbench(database_url: str) -> float:
    parts = urlsplit(database_url)
    env = {**os.environ, "PGPASSWORD": parts.password or ""}
    common = ["-h", parts.hostname or "", "-p", str(parts.port or 5432), "-U", parts.username or ""]
    name = parts.path.lstrip("/")
    subprocess.run(
        [PGBENCH, "-i", "-q", "-s", "10", *common, name], env=env, check=True, capture_output=True
    )
    run = [PGBENCH, "-c", "32", "-j", "2", "-T", str(int(SECONDS)), *common, name]
    output = subprocess.run(run, env=env, check=True, capture_output=True, text=True).stdout
    match = re.search(r"tps = ([0-9.]+)", output)
    if match is None:
        raise RuntimeError(f"pgbench printed no tps:\n{output}")
    return float(match.group(1))


async def main() -> None:
    infra = ensure_infrastructure()
    suffix = uuid.uuid4().hex[:8]
    booking_db, pgbench_db = f"bench_booking_{suffix}", f"bench_pgbench_{suffix}"
    templates = MigratedTemplates(infra.pg_admin_dsn)
    try:
        booking_url = templates.database("booking", booking_db)
        checkouts = await measure_checkouts(booking_url, infra.kafka_bootstrap)
        rate = checkouts.checkouts_per_s
        print(f"checkout over gRPC, {CLIENTS} clients, distinct slots: {rate:.0f}/s")
        print(f"checkout latency: p50 {checkouts.p50_ms:.1f} ms, p99 {checkouts.p99_ms:.1f} ms")
        print(checkouts.cpu)
        tps = measure_pgbench(create_database(infra.pg_admin_dsn, pgbench_db))
        print(f"pgbench TPC-B-like, 32 clients, scale 10: {tps:.0f} tps")
    finally:
        drop_database(infra.pg_admin_dsn, booking_db)
        drop_database(infra.pg_admin_dsn, pgbench_db)
        templates.drop_all()
    ratio = checkouts.checkouts_per_s / tps
    print(f"ratio checkout/pgbench: {ratio:.2f} (target >= 0.3)")
    figures = {
        "checkouts_per_s": round(checkouts.checkouts_per_s, 1),
        "p50_ms": round(checkouts.p50_ms, 2),
        "p99_ms": round(checkouts.p99_ms, 2),
        "pgbench_tps": round(tps, 1),
        "ratio": round(ratio, 3),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    asyncio.run(main())
