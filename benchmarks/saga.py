"""The whole card saga under load, over the public HTTP API, against pgbench.

    make bench-saga      (.venv/bin/python -m benchmarks.saga; N=16 BENCH_SECONDS=60)

Starts the platform as `make up` does (tests/support/platform.py: scripts/platform.sh with
fresh databases, topics, free ports and a temporary state folder), so every service runs
in the platform's own configuration: one process per part, trace export to this run's
Jaeger, JSON logs, Prometheus scraping each /metrics, mutual TLS between the parts, each
process its own SASL/SCRAM principal at the broker. Through the operators' API: STUDIOS
studios, each with its own lock at the lock sandbox (ACCESS_SPACE_DEVICES, access restarted
to read it: one lock holds at most 1,000 live codes) and one-minute slots inside access's
lead time, so a confirmed booking's door code is made at once; N organisations, each one
customer with an address. Then (benchmarks/customers.py):

1. warm-up: one saga per customer;
2. idle: the database transactions the platform commits with no customer (timers, relays);
3. closed loop: N customers, each starting its next saga when the last has ended, for
   BENCH_SECONDS: the maximum rate, sagas/s;
4. open loop: sagas arriving at half that rate, by the clock, for BENCH_SECONDS;
5. audit: every saga ends confirmed (its PIN set at the lock, its confirmation mail there)
   or expired with no code at the lock; anything else is lost;
6. pgbench (TPC-B-like, 32 clients, scale 10) on the same PostgreSQL, the platform stopped:
   once before the platform starts and once after it stopped, the loops between them. The
   ratio takes their mean: on the shared machine one run's pgbench and platform moved by a
   third against each other within minutes (docs/performance.md, "The card saga");
7. the saga floor (benchmarks/saga_floor.py): the price of each kind of work a saga asks
   for (a transaction, a gRPC call, an HTTP request, a record, a delivery, a mail) when the
   smallest programs on the same libraries do it, times how many of each the closed loop's
   sagas asked for (benchmarks/units.py, the parts' own counters): the least CPU a saga
   can cost on this stack, and the ratio that would give.

For each loop: sagas/s, POST to PIN active (the lock sandbox's own record of when it set
the code) p50 and p99, database transactions per saga (pg_stat_database.xact_commit over the
four services' databases; the gateway's own apart), Kafka records per saga (end offsets of
the platform's topics), CPU per saga by process. The ratio is sagas/s over (pgbench tps over
transactions per saga): the share of the database's transaction rate the saga reaches. The
last line is one JSON object.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import psycopg
from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition

from benchmarks import cpu, saga_floor, units
from benchmarks.booking import pgbench_on_a_new_database
from benchmarks.configuration import deviations
from benchmarks.customers import (
    Customer,
    Pace,
    Saga,
    Sandboxes,
    Slot,
    SlotSupply,
    Verdict,
    audit,
    closed_loop,
    expect,
    iso,
    local_setting,
    open_loop,
    run_saga,
)
from benchmarks.stats import percentile
from servicekit.http_transport import UNCOMPRESSED, AiohttpTransport
from servicekit.kafka_access import client_security
from servicekit.runtime import run_event_loop
from tests.gateway.api import OPS, Api
from tests.support.infrastructure import (
    Infrastructure,
    ensure_infrastructure,
)
from tests.support.platform import Platform, started_platform
from tests.support.sandboxes import CONTROL_TOKEN, SandboxAuth
from tests.support.topics import PLATFORM_TOPICS

CUSTOMERS = int(os.environ.get("N", "16"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "60"))  # each loop's
POLL_S = float(os.environ.get("BENCH_POLL_S", "0.25"))  # how often a customer asks again
STUDIOS = int(os.environ.get("BENCH_STUDIOS", "30"))
SERVICES = ("booking", "payment", "access", "notify")
PARTS = (*SERVICES, "gateway", "card-gateway", "lock-provider", "mail-sandbox", "jaeger")
PARTS_ALSO = ("prometheus",)
# PostgreSQL reports a backend's counters at most once a second, and an idle backend's
# within 10 s: the counters are read this long after a loop's last saga.
STATS_FLUSH_S = 11.0
IDLE_S = 12.0
SLOT_MINUTES = 1
EARLIEST_SLOT = timedelta(minutes=10)  # from now, and as far inside the lead time
THIS_PROCESS = "customers (this process)"


# Pure figures, tested in tests/benchmarks


@dataclass(frozen=True)
class Load:
    """What one loop cost: from its start until its last saga ended, with the database's
    idle rate taken off for the wait for its counters."""

    sagas: list[Saga]
    window_s: float  # how long sagas were started
    transactions: dict[str, float]  # by database role: booking, ..., gateway
    idle_transactions: dict[str, float]  # what the idle rate would have committed meanwhile
    records: int
    cpu_ms: dict[str, float]  # by process, per saga
    machine_ms: float  # per saga
    busy_share: float
    worst_lateness_s: float = 0.0
    gateway_requests: int = 0  # the customers' (the sandboxes' pages and records apart)
    # What the parts counted meanwhile (benchmarks/units.py), and the customers' requests
    # to the sandboxes themselves.
    units: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Figures:
    started: int
    completed_in_window: int
    sagas_per_s: float
    pin_active_p50_ms: float
    pin_active_p99_ms: float
    seen_p50_ms: float  # what the customer saw: the door opening
    lost: int
    tx_per_saga: float  # the four services' databases
    tx_per_saga_over_idle: float  # less what they commit with no customer
    gateway_tx_per_saga: float
    records_per_saga: float
    cpu_ms: dict[str, float]
    gateway_requests_per_saga: float
    lost_details: list[str] = field(default_factory=list)
    units_per_saga: dict[str, float] = field(default_factory=dict)


def completed_in_window(load: Load) -> int:
    """The sagas that ended within the loop's window, which opens with its first saga."""
    end = min((s.due for s in load.sagas), default=0.0) + load.window_s
    return sum(1 for s in load.sagas if s.completed and s.ended <= end)


def figures(load: Load, verdicts: dict[int, Verdict]) -> Figures:
    """The loop's figures; `verdicts` by id() of each saga, every saga of the loop in it."""
    mine = [verdicts[id(saga)] for saga in load.sagas]
    started = len(load.sagas)
    in_window = completed_in_window(load)
    pin_ms = [
        (v.pin_active_at - v.saga.due) * 1000
        for v in mine
        if v.outcome == "confirmed" and v.pin_active_at is not None
    ]
    seen_ms = [(s.pin_seen - s.due) * 1000 for s in load.sagas if s.pin_seen]
    per_saga = 1 / started if started else 0.0
    return Figures(
        started=started,
        completed_in_window=in_window,
        sagas_per_s=in_window / load.window_s if load.window_s > 0 else 0.0,
        pin_active_p50_ms=percentile(pin_ms, 0.5),
        pin_active_p99_ms=percentile(pin_ms, 0.99),
        seen_p50_ms=percentile(seen_ms, 0.5),
        lost=sum(v.lost for v in mine),
        tx_per_saga=sum(load.transactions.get(db, 0.0) for db in SERVICES) * per_saga,
        tx_per_saga_over_idle=sum(
            load.transactions.get(db, 0.0) - load.idle_transactions.get(db, 0.0) for db in SERVICES
        )
        * per_saga,
        gateway_tx_per_saga=load.transactions.get("gateway", 0.0) * per_saga,
        records_per_saga=load.records * per_saga,
        gateway_requests_per_saga=load.gateway_requests * per_saga,
        cpu_ms=load.cpu_ms,
        lost_details=[
            f"{v.saga.booking_id or v.saga.slot.slot_id}: {v.detail}" for v in mine if v.lost
        ],
        units_per_saga={kind: count * per_saga for kind, count in load.units.items()},
    )


def summary(
    closed: Figures,
    half: Figures,
    pgbench_runs: Sequence[float],
    lost_elsewhere: int = 0,
) -> dict[str, Any]:
    """The JSON line. `pgbench_runs`: pgbench's tps before and after the loops, whose mean
    the ratio takes; `lost_elsewhere`: lost sagas outside the two loops (the warm-up)."""
    pgbench_tps = statistics.fmean(pgbench_runs)
    capacity = pgbench_tps / closed.tx_per_saga if closed.tx_per_saga else 0.0
    return {
        "sagas_per_s": round(closed.sagas_per_s, 2),
        "ratio": round(closed.sagas_per_s / capacity, 3) if capacity else 0.0,
        "pin_active_p50_ms": round(closed.pin_active_p50_ms, 1),
        "pin_active_p99_ms": round(closed.pin_active_p99_ms, 1),
        "tx_per_saga": round(closed.tx_per_saga, 1),
        "lost": closed.lost + half.lost + lost_elsewhere,
        "tx_per_saga_over_idle": round(closed.tx_per_saga_over_idle, 1),
        "half_rate_sagas_per_s": round(half.sagas_per_s, 2),
        "half_rate_pin_active_p50_ms": round(half.pin_active_p50_ms, 1),
        "half_rate_pin_active_p99_ms": round(half.pin_active_p99_ms, 1),
        "half_rate_tx_per_saga": round(half.tx_per_saga, 1),
        "gateway_tx_per_saga": round(closed.gateway_tx_per_saga, 1),
        "kafka_records_per_saga": round(closed.records_per_saga, 2),
        "gateway_requests_per_saga": round(closed.gateway_requests_per_saga, 1),
        "pgbench_tps": round(pgbench_tps, 1),
        "pgbench_tps_runs": [round(tps, 1) for tps in pgbench_runs],
        "sagas": closed.started + half.started,
        "cpu_ms_per_saga": {name: round(ms, 2) for name, ms in closed.cpu_ms.items()},
        "units_per_saga": {kind: round(n, 2) for kind, n in closed.units_per_saga.items()},
        "customers": CUSTOMERS,
        "configuration": "make up",
    }


# Counters


@dataclass(frozen=True)
class Counters:
    at: float  # time.monotonic()
    transactions: dict[str, int]  # xact_commit by database role
    records: int


def _database_names(platform: Platform) -> dict[str, str]:
    """Each part's database name (its URL's path) by role."""
    return {
        part: urlsplit(platform.env[f"{part.upper()}_MIGRATION_DATABASE_URL"]).path.lstrip("/")
        for part in (*SERVICES, "gateway")
    }


async def read_counters(infra: Infrastructure, platform: Platform) -> Counters:
    names = _database_names(platform)
    async with await psycopg.AsyncConnection.connect(infra.pg_admin_dsn, autocommit=True) as db:
        rows = await (
            await db.execute(
                "SELECT datname, xact_commit FROM pg_stat_database WHERE datname = ANY(%s)",
                (list(names.values()),),
            )
        ).fetchall()
    by_name = {str(name): int(count) for name, count in rows}
    prefix = platform.env["TOPIC_PREFIX"]
    partitions = [
        TopicPartition(prefix + topic, p)
        for topic, count in PLATFORM_TOPICS.items()
        for p in range(count)
    ]
    consumer = AIOKafkaConsumer(bootstrap_servers=infra.kafka_bootstrap, **client_security())
    await consumer.start()
    try:
        ends = await consumer.end_offsets(partitions)
    finally:
        await consumer.stop()
    return Counters(
        time.monotonic(),
        {role: by_name[name] for role, name in names.items()},
        sum(ends.values()),
    )


def _process_names(platform: Platform, infra: Infrastructure) -> dict[int, str]:
    """The pids of this run's processes by name: the platform's parts, this process, and
    the PostgreSQL server (with every backend) and the broker that listen on its ports."""
    names = {os.getpid(): THIS_PROCESS}
    for part in (*PARTS, *PARTS_ALSO):
        with contextlib.suppress(OSError, ValueError):
            names[platform.pid(part)] = part
    postmaster = cpu.listening_pid(urlsplit(infra.pg_admin_dsn).port or 5432)
    if postmaster is not None:
        names[postmaster] = "postgresql"
        names |= {pid: "postgresql" for pid in cpu.children_of(postmaster)}
    broker = cpu.listening_pid(int(infra.kafka_bootstrap.rsplit(":", 1)[1]))
    if broker is not None:
        names[broker] = "kafka"
    return names


@dataclass
class Bench:
    infra: Infrastructure
    platform: Platform
    customers: list[Customer]
    sandboxes: Sandboxes
    slots: SlotSupply
    pace: Pace
    tally: Tally
    idle_per_s: dict[str, float] = field(default_factory=dict)
    idle_cpu_ms_per_s: dict[str, float] = field(default_factory=dict)

    def cpu_sample(self) -> cpu.CpuSample | None:
        return cpu.sample(names=_process_names(self.platform, self.infra))

    async def idle(self) -> Counters:
        """The transactions committed per second with no customer, from a quiet start, and
        the CPU each process spends per second meanwhile."""
        await asyncio.sleep(STATS_FLUSH_S)
        first, cpu_before = await read_counters(self.infra, self.platform), self.cpu_sample()
        await asyncio.sleep(IDLE_S)
        last, cpu_after = await read_counters(self.infra, self.platform), self.cpu_sample()
        seconds = last.at - first.at
        self.idle_per_s = {
            db: (last.transactions[db] - count) / seconds
            for db, count in first.transactions.items()
        }
        # Spent per whole window, then per second of it.
        over_window = _platform_cpu(cpu.spent(cpu_before, cpu_after, 1))
        self.idle_cpu_ms_per_s = {name: ms / seconds for name, ms in over_window.items()}
        return last

    def metrics_urls(self) -> list[str]:
        env = self.platform.env
        parts = [env[f"{service.upper()}_METRICS_ADDRESS"] for service in SERVICES]
        return [f"http://{address}/metrics" for address in (*parts, env["GATEWAY_ADDRESS"])]

    async def measure(
        self, before: Counters, window_s: float, load: Awaitable[tuple[list[Saga], float]]
    ) -> tuple[Load, Counters]:
        units_before = await units.read(self.metrics_urls())
        units_before["sandbox_requests"] = self.tally.sandbox_requests
        cpu_before = self.cpu_sample()
        started, requests = time.monotonic(), self.tally.requests
        sagas, lateness = await load
        ended = time.monotonic()
        spent = cpu.spent(cpu_before, self.cpu_sample(), max(1, len(sagas)))
        units_after = await units.read(self.metrics_urls())
        units_after["sandbox_requests"] = self.tally.sandbox_requests
        await asyncio.sleep(STATS_FLUSH_S)
        after = await read_counters(self.infra, self.platform)
        tail = after.at - ended
        transactions = {
            db: count - before.transactions[db] - self.idle_per_s.get(db, 0.0) * tail
            for db, count in after.transactions.items()
        }
        return (
            Load(
                sagas=sagas,
                window_s=window_s,
                transactions=transactions,
                idle_transactions={
                    db: rate * (ended - started) for db, rate in self.idle_per_s.items()
                },
                records=after.records - before.records,
                cpu_ms=_platform_cpu(spent),
                machine_ms=spent.machine_ms if spent else 0.0,
                busy_share=spent.busy_share if spent else 0.0,
                worst_lateness_s=lateness,
                gateway_requests=self.tally.requests - requests,
                units=units.gained(units_before, units_after),
            ),
            after,
        )


def _platform_cpu(spent: cpu.Spent | None) -> dict[str, float]:
    """CPU per saga of this run's processes, and of everything else on the machine."""
    if spent is None:
        return {}
    ours = (*PARTS, *PARTS_ALSO, "postgresql", "kafka", THIS_PROCESS)
    shown = {name: spent.ms_per_unit.get(name, 0.0) for name in ours}
    shown["other processes"] = spent.machine_ms - sum(shown.values())
    return shown


# Setting up


async def studios(
    api: Api, lock: httpx.AsyncClient, count: int
) -> tuple[dict[str, str], list[Slot]]:
    """`count` studios, each with its own lock and one-minute slots inside access's lead
    time; their space-to-lock setting and the slots, latest first and studios in turn, so
    that the slots of a long run still lie ahead when they are booked."""
    lead = timedelta(seconds=int(local_setting("ACCESS_ACTIVATION_LEAD_SECONDS") or "7200"))
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    first, last = now + EARLIEST_SLOT, now + lead - EARLIEST_SLOT
    minutes = int((last - first) / timedelta(minutes=SLOT_MINUTES))
    devices: dict[str, str] = {}
    slots: list[Slot] = []
    run = uuid.uuid4().hex[:6]
    for number in range(count):
        device = f"bench-{run}-door-{number:02d}"
        added = await lock.post("/_sandbox/devices", json={"device_id": device})
        expect(added, 201, "a studio's lock")
        made = await api.call(
            "POST", "/v1/ops/spaces", OPS, {"name": f"Bench {number}", "timezone": "UTC"}
        )
        expect(made, 201, "studio")
        space_id = str(made.json()["space_id"])
        devices[space_id] = device
        new = [
            {
                "starts_at": iso(first + timedelta(minutes=m * SLOT_MINUTES)),
                "ends_at": iso(first + timedelta(minutes=(m + 1) * SLOT_MINUTES)),
                "price": {"amount": 45000, "currency": "CZK"},
            }
            for m in range(minutes)
        ]
        created = await api.call("POST", f"/v1/ops/spaces/{space_id}/slots", OPS, {"slots": new})
        expect(created, 201, "slots")
        for slot in created.json():
            slots.append(Slot(str(slot["slot_id"]), device, slot["starts_at"], slot["ends_at"]))
    slots.sort(key=lambda s: (s.starts_at, s.device), reverse=True)
    return devices, slots


async def restart_access(platform: Platform, devices: dict[str, str]) -> None:
    """Access reads which lock opens which studio at its start (ACCESS_SPACE_DEVICES)."""
    platform.env["ACCESS_SPACE_DEVICES"] = ",".join(f"{s}={d}" for s, d in devices.items())
    pid = platform.pid("access")
    os.kill(pid, signal.SIGTERM)
    for _ in range(300):
        if not _alive(pid):
            break
        await asyncio.sleep(0.1)
    await platform.up()


def _alive(pid: int) -> bool:
    """Running, not a zombie: the platform's processes outlive the script that started
    them, and whoever adopts them may never reap one."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


@dataclass
class Tally:
    """The customers' requests so far: to the gateway, and to the sandboxes themselves."""

    requests: int = 0
    sandbox_requests: int = 0

    async def count(self, _request: httpx.Request) -> None:
        self.requests += 1

    async def count_sandbox(self, _request: httpx.Request) -> None:
        self.sandbox_requests += 1


@contextlib.asynccontextmanager
async def customers_of(
    platform: Platform, count: int, tally: Tally
) -> AsyncIterator[list[Customer]]:
    """`count` organisations, each with one member with an address of its own, each
    customer with an HTTP client of its own."""
    async with contextlib.AsyncExitStack() as stack:
        customers = []
        for _ in range(count):
            client = httpx.AsyncClient(
                base_url=platform.gateway,
                timeout=15,
                event_hooks={"request": [tally.count]},
                headers=UNCOMPRESSED,
                transport=AiohttpTransport(),
            )
            api = Api(await stack.enter_async_context(client))
            email = f"bench-{uuid.uuid4().hex[:10]}@example.test"
            customers.append(Customer(api, await api.org(email=email), email))
        yield customers


@contextlib.asynccontextmanager
async def sandboxes_of(platform: Platform, tally: Tally | None = None) -> AsyncIterator[Sandboxes]:
    """Clients of the three sandboxes; each request they send counted in `tally`."""
    control = SandboxAuth(control_token=CONTROL_TOKEN)
    card_url = platform.env["CARD_GATEWAY_URL"]
    hooks = {"request": [(tally or Tally()).count_sandbox]}
    async with (
        httpx.AsyncClient(
            base_url=card_url,
            timeout=15,
            event_hooks=hooks,
            headers=UNCOMPRESSED,
            transport=AiohttpTransport(),
        ) as card,
        httpx.AsyncClient(
            base_url=platform.env["LOCK_PROVIDER_URL"],
            auth=control,
            timeout=30,
            event_hooks=hooks,
            headers=UNCOMPRESSED,
            transport=AiohttpTransport(),
        ) as lock,
        httpx.AsyncClient(
            base_url=platform.url("MAIL_SANDBOX_HTTP_PORT"),
            timeout=15,
            event_hooks=hooks,
            headers=UNCOMPRESSED,
            transport=AiohttpTransport(),
        ) as mail,
    ):
        yield Sandboxes(card, card_url, lock, mail)


# Running


@dataclass(frozen=True)
class Outcome:
    """What a run measured: each loop's figures and load, the sagas the warm-up lost, and
    the CPU each process spent per second with no customer."""

    closed: Figures
    half: Figures
    closed_load: Load
    half_load: Load
    warm_lost: int
    idle_cpu_ms_per_s: dict[str, float]


async def _loops(bench: Bench) -> Outcome:
    customers, sandboxes, slots, pace = bench.customers, bench.sandboxes, bench.slots, bench.pace
    warm_up = [
        Saga(n, slot, due=time.time()) for n in range(len(customers)) if (slot := slots.take())
    ]
    await asyncio.gather(*(run_saga(customers[s.customer], sandboxes, s, pace) for s in warm_up))
    print(
        f"warm-up: {sum(s.completed for s in warm_up)} of {len(warm_up)} sagas completed",
        flush=True,
    )
    before = await bench.idle()
    print(
        "idle: "
        + ", ".join(f"{db} {rate:.1f}" for db, rate in bench.idle_per_s.items())
        + " transactions/s with no customer",
        flush=True,
    )
    print(
        "idle CPU (ms per second): "
        + ", ".join(f"{name} {ms:.1f}" for name, ms in bench.idle_cpu_ms_per_s.items()),
        flush=True,
    )

    async def closed() -> tuple[list[Saga], float]:
        return await closed_loop(customers, sandboxes, slots, SECONDS, pace), 0.0

    closed_load, before = await bench.measure(before, SECONDS, closed())
    print(f"closed loop: {len(closed_load.sagas)} sagas started", flush=True)
    rate = max(completed_in_window(closed_load) / SECONDS, 0.1) / 2

    async def half() -> tuple[list[Saga], float]:
        done = await open_loop(customers, sandboxes, slots, rate, SECONDS, pace)
        return done.sagas, done.worst_lateness_s

    half_load, _ = await bench.measure(before, SECONDS, half())
    print(f"open loop at {rate:.2f}/s: {len(half_load.sagas)} sagas started", flush=True)
    every = warm_up + closed_load.sagas + half_load.sagas
    verdicts = await audit(every, customers, sandboxes, pace)
    by_saga = {id(v.saga): v for v in verdicts}
    warm_lost = sum(by_saga[id(s)].lost for s in warm_up)
    return Outcome(
        figures(closed_load, by_saga),
        figures(half_load, by_saga),
        closed_load,
        half_load,
        warm_lost,
        bench.idle_cpu_ms_per_s,
    )


def _print_loop(title: str, figures_: Figures, load: Load) -> None:
    print(f"== {title}")
    print(
        f"  {figures_.started} sagas started, {figures_.completed_in_window} completed within "
        f"the {load.window_s:.0f} s: {figures_.sagas_per_s:.2f} sagas/s; lost {figures_.lost}"
    )
    print(
        f"  POST to PIN active (the lock's record): p50 {figures_.pin_active_p50_ms:.0f} ms, "
        f"p99 {figures_.pin_active_p99_ms:.0f} ms; the door opening as the customer saw it "
        f"p50 {figures_.seen_p50_ms:.0f} ms"
    )
    per_db = ", ".join(
        f"{db} {count / max(1, figures_.started):.1f}" for db, count in load.transactions.items()
    )
    print(
        f"  database transactions per saga: {figures_.tx_per_saga:.1f} in the four services' "
        f"databases ({per_db}), {figures_.tx_per_saga_over_idle:.1f} above their idle rate; "
        f"Kafka records per saga {figures_.records_per_saga:.2f}"
    )
    print(
        "  the customers' requests to the gateway per saga: "
        f"{figures_.gateway_requests_per_saga:.1f}"
    )
    if figures_.units_per_saga:
        print(
            "  work per saga, as the parts counted it: "
            + ", ".join(f"{kind} {n:.2f}" for kind, n in figures_.units_per_saga.items())
        )
    shown = sorted(load.cpu_ms.items(), key=lambda item: -item[1])
    print("  CPU per saga (ms): " + ", ".join(f"{name} {ms:.1f}" for name, ms in shown))
    print(f"  machine {load.machine_ms:.1f} ms per saga, busy {load.busy_share:.0%} of its cores")
    if load.worst_lateness_s:
        print(f"  the latest start behind the clock: {load.worst_lateness_s * 1000:.0f} ms")
    for line in figures_.lost_details[:20]:
        print(f"  lost: {line}")


async def _measure(infra: Infrastructure) -> Outcome:
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="bench-saga-") as state:
        async with (
            started_platform(infra, Path(state) / "state") as platform,
            sandboxes_of(platform, tally) as sandboxes,
            Api.at(platform.gateway) as ops,
        ):
            if problems := deviations(platform.env):
                raise SystemExit("not the platform's own configuration: " + "; ".join(problems))
            devices, slots = await studios(ops, sandboxes.lock, STUDIOS)
            await restart_access(platform, devices)
            print(
                f"{STUDIOS} studios, each its own lock; {len(slots)} one-minute slots "
                "inside access's lead time",
                flush=True,
            )
            async with customers_of(platform, CUSTOMERS, tally) as customers:
                bench = Bench(
                    infra, platform, customers, sandboxes, SlotSupply(slots), Pace(POLL_S), tally
                )
                return await _loops(bench)


def _platform_line() -> str:
    return (
        "platform: as `make up` runs it (scripts/platform.sh): one process per part, traces "
        "exported to Jaeger over OTLP, JSON logs, Prometheus scraping every /metrics, mutual "
        "TLS between the parts, each process its own SASL/SCRAM principal at the broker; "
        "besides: its own databases, topics and ports, the gateway's write limits per caller "
        "and address raised (all customers come from one address), each studio its own lock"
    )


def _floor(closed: Figures, tps: float) -> dict[str, Any]:
    """The saga floor (benchmarks/saga_floor.py), measured now with the platform stopped,
    priced by what this run's sagas asked of the parts."""
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.saga_floor"], check=True, capture_output=True, text=True
    )
    prices = json.loads(run.stdout.strip().splitlines()[-1])
    counts = closed.units_per_saga | {
        "tx_per_saga": closed.tx_per_saga,
        "kafka_records_per_saga": closed.records_per_saga,
    }
    by_kind = saga_floor.price(prices, counts)
    ms = sum(by_kind.values())
    ratio = saga_floor.floor_ratio(ms, os.cpu_count() or 1, closed.tx_per_saga, tps)
    print(
        "the saga floor (the same work by the smallest programs on the same libraries, "
        f"benchmarks/saga_floor.py): {ms:.1f} ms of machine CPU per saga ("
        + ", ".join(f"{kind} {v:.1f}" for kind, v in by_kind.items())
        + f"), ratio {ratio:.3f} with every core busy"
    )
    return {
        "floor_ms_per_saga": round(ms, 1),
        "floor_ratio": round(ratio, 3),
        "floor_unit_ms": prices,
        "floor_ms_per_saga_by_kind": {kind: round(v, 2) for kind, v in by_kind.items()},
    }


def main() -> None:
    infra = ensure_infrastructure()
    print(_platform_line(), flush=True)
    print(
        f"{CUSTOMERS} customers, {SECONDS:.0f} s per loop, asking again every {POLL_S} s",
        flush=True,
    )
    tps_before = pgbench_on_a_new_database(infra.pg_admin_dsn)
    outcome = run_event_loop(_measure(infra))
    closed, half, warm_lost = outcome.closed, outcome.half, outcome.warm_lost
    tps_runs = (tps_before, pgbench_on_a_new_database(infra.pg_admin_dsn))
    _print_loop(
        f"closed loop: {CUSTOMERS} customers, the maximum rate", closed, outcome.closed_load
    )
    _print_loop("open loop: half that rate, by the clock", half, outcome.half_load)
    line = summary(closed, half, tps_runs, warm_lost) | {
        "idle_cpu_ms_per_s": {name: round(ms, 1) for name, ms in outcome.idle_cpu_ms_per_s.items()}
    }
    tps = line["pgbench_tps"]
    print(
        f"pgbench TPC-B-like, 32 clients, scale 10, the platform stopped: {tps:.0f} tps "
        f"(before the platform started {tps_runs[0]:.0f}, after it stopped {tps_runs[1]:.0f})"
    )
    line |= _floor(closed, tps)
    print(
        f"ratio sagas/s over (pgbench tps / transactions per saga): {line['ratio']} "
        f"({closed.sagas_per_s:.2f} / ({tps:.0f} / {closed.tx_per_saga:.1f}))"
    )
    if warm_lost:
        print(f"lost in the warm-up: {warm_lost}")
    print(json.dumps(line))


if __name__ == "__main__":
    main()
