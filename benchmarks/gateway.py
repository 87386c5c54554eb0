"""What the gateway adds to a call: the same reads and checkouts through the gateway's HTTP
API and straight to the booking service over gRPC, side by side in one run.

    make bench-gateway      (.venv/bin/python -m benchmarks.gateway)

Starts the platform as `make up` does (tests/support/platform.py: `scripts/platform.sh up`
with fresh databases the script migrates, its own topics and free ports, pid files and logs
in a temporary PLATFORM_STATE_DIR), the gateway in development mode. Through the
gateway's operator API: a studio, its slots, an organisation and a member, and one booking
to read. Then, in each of BENCH_ROUNDS rounds:

1. wrk, 32 connections on 2 threads, for BENCH_SECONDS: `GET /v1/orgs/{org}/bookings/{id}`,
   through the platform's gateway (which answers a booking it read lately from memory:
   decision 0008) and, beside it, through a second gateway process that keeps nothing
   (GATEWAY_BOOKING_CACHE_MS=0), so every GET asks the services: what a first read costs;
   and through the floor (benchmarks/gateway_floor.py): one GetBooking, nothing else;
2. ghz, 32 concurrent clients: BENCH_GETS of the booking service's GetBooking of it;
3. wrk, for BENCH_SECONDS: `POST /v1/orgs/{org}/bookings`, each request a fresh
   Idempotency-Key and a free slot, by card (benchmarks/gateway.lua), through the gateway
   and through the floor: the floor's CPU per POST in the same run says how much of the
   gateway's is the machine's speed that hour (`post_gateway_cpu_over_floor`);
4. ghz: BENCH_CHECKOUTS of the booking service's Checkout, each on a free slot by card.

After those, BENCH_ROUNDS rounds of open-loop loads (benchmarks/open_loop.py and
benchmarks/gateway_open.py): BENCH_OPEN_RATE requests/s (20) for BENCH_OPEN_SECONDS (20)
each, sent by the clock whatever the earlier ones are doing, latency from each request's
due time: the gateway's GET, the floor's (benchmarks/gateway_floor.py), booking's
GetBooking over gRPC, the gateway's POST by card (fresh key, free slot), the floor's, and
booking's Checkout over gRPC (free slot), in that order. What the floor adds over the
direct call is the least any Python HTTP front on this stack adds to it.

Each load starts once the services are about idle again (`settled`), so the work a load
leaves behind (the checkouts' events) is not counted as the next one's. Prints each load's
p50 and p99 and the CPU the gateway and the booking service spent per answer (medians over
the rounds), the p50 the gateway adds to each call, issue 37's figures (the gateway's CPU
per answer, its rates over the floor's and a direct Checkout's, booking's CPU per gateway
GET over a direct GetBooking's), the open-loop p50 and p99 and what the gateway adds to
them (`get_added_p50_ms_at_20rps`, ...) and what the floor adds
(`get_floor_added_p50_ms_at_20rps`, ...), and one JSON object on the last line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from benchmarks import gateway_open
from benchmarks.booking import ghz_credentials
from benchmarks.open_loop import OpenLoopRun, schedule
from benchmarks.stats import percentile
from tests.support.gateway_process import gateway_process, replica_settings
from tests.support.infrastructure import REPO_ROOT, Infrastructure, ensure_infrastructure
from tests.support.platform import Platform, started_platform
from tests.support.sandboxes import free_port

CONNECTIONS = 32
THREADS = 2
SECONDS = int(os.environ.get("BENCH_SECONDS", "5"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
GATEWAY_CHECKOUTS = int(os.environ.get("BENCH_GATEWAY_SLOTS", "3000"))  # slots per round
DIRECT_CHECKOUTS = int(os.environ.get("BENCH_CHECKOUTS", "1500"))  # per round
# A count, not a duration: ghz ends a timed run by cancelling the calls in flight, which
# would count as failures.
DIRECT_GETS = int(os.environ.get("BENCH_GETS", "4000"))  # per round
# The open-loop loads (benchmarks/gateway_open.py): requests/s, and seconds each.
OPEN_RATE = float(os.environ.get("BENCH_OPEN_RATE", "20"))
OPEN_SECONDS = float(os.environ.get("BENCH_OPEN_SECONDS", "20"))
OPEN_CHECKOUTS = len(schedule(OPEN_RATE, OPEN_SECONDS))  # per round and side
OPEN_POSTS = [load for load in gateway_open.LOADS if load.endswith("_post")]
GHZ = Path(os.environ.get("GHZ", REPO_ROOT / ".local" / "bin" / "ghz"))
WRK = os.environ.get("WRK", "wrk")
LUA = Path(__file__).with_name("gateway.lua")
PROTO = REPO_ROOT / "protos" / "liftfit" / "booking" / "v1" / "booking.proto"
BOOKING = "liftfit.booking.v1.BookingService"
MEMBER = "bench"
SLOTS_PER_REQUEST = 500
SERVICES = ("booking", "payment", "access", "notify")
SETTLED_CPU_S_PER_S = 0.08  # each service under this share of a core counts as idle
SETTLE_MAX_S = 120.0


@dataclass(frozen=True)
class Load:
    """One load's figures: latencies in ms, answers per second, answers that were not OK,
    and the CPU the gateway and the booking service spent per answer (ms)."""

    p50_ms: float
    p99_ms: float
    per_s: float
    failed: int
    answers: int
    gateway_cpu_ms: float = 0.0
    booking_cpu_ms: float = 0.0


@dataclass(frozen=True)
class Catalogue:
    """What the loads use: the organisation, a booking to read, free slots by load."""

    org_id: str
    booking_id: str
    gateway_slots: list[list[str]]  # per round
    floor_slots: list[list[str]]  # per round
    direct_slots: list[list[str]]  # per round
    open_slots: list[dict[str, list[str]]]  # per round, by open-loop POST load


async def _post(http: httpx.AsyncClient, path: str, body: dict[str, Any], user: str) -> Any:
    headers = {"X-Dev-User": user, "Idempotency-Key": uuid.uuid4().hex}
    response = await http.post(path, json=body, headers=headers)
    if response.status_code != 201:
        raise RuntimeError(f"POST {path}: {response.status_code} {response.text[:500]}")
    return response.json()


async def _create_slots(http: httpx.AsyncClient, space_id: str, count: int) -> list[str]:
    # Slots are sold only before they start.
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(days=7)
    price = {"amount": 45000, "currency": "CZK"}
    slot_ids: list[str] = []
    for first in range(0, count, SLOTS_PER_REQUEST):
        hours = range(first, min(first + SLOTS_PER_REQUEST, count))
        slots = [
            {
                "starts_at": (start + timedelta(hours=h)).isoformat().replace("+00:00", "Z"),
                "ends_at": (start + timedelta(hours=h + 1)).isoformat().replace("+00:00", "Z"),
                "price": price,
            }
            for h in hours
        ]
        created = await _post(http, f"/v1/ops/spaces/{space_id}/slots", {"slots": slots}, "ops")
        listed = created["slots"] if isinstance(created, dict) else created
        slot_ids += [slot["slot_id"] for slot in listed]
    return slot_ids


async def prepare(gateway: str) -> Catalogue:
    """Everything through the gateway's operator API, as an operator would."""
    closed = 2 * GATEWAY_CHECKOUTS + DIRECT_CHECKOUTS  # the gateway's, the floor's, ghz's
    per_round = closed + len(OPEN_POSTS) * OPEN_CHECKOUTS
    async with httpx.AsyncClient(base_url=gateway, timeout=60) as http:
        space = await _post(http, "/v1/ops/spaces", {"name": "bench", "timezone": "UTC"}, "ops")
        slots = await _create_slots(http, space["space_id"], ROUNDS * per_round + 1)
        org = await _post(http, "/v1/ops/orgs", {"name": "bench"}, "ops")
        org_id = org["org_id"]
        await _post(
            http,
            f"/v1/ops/orgs/{org_id}/members",
            {"user": MEMBER, "role": "member", "locale": "en"},
            "ops",
        )
        body = {"slot_id": slots[-1], "party_size": 1, "payment_mode": "card"}
        booking = await _post(http, f"/v1/orgs/{org_id}/bookings", body, MEMBER)
    rounds = [slots[i * per_round : (i + 1) * per_round] for i in range(ROUNDS)]
    return Catalogue(
        org_id,
        booking["booking_id"],
        [chunk[:GATEWAY_CHECKOUTS] for chunk in rounds],
        [chunk[GATEWAY_CHECKOUTS : 2 * GATEWAY_CHECKOUTS] for chunk in rounds],
        [chunk[2 * GATEWAY_CHECKOUTS : closed] for chunk in rounds],
        [
            {
                load: chunk[closed + i * OPEN_CHECKOUTS : closed + (i + 1) * OPEN_CHECKOUTS]
                for i, load in enumerate(OPEN_POSTS)
            }
            for chunk in rounds
        ],
    )


async def wrk(url: str, *script_args: str) -> Load:
    """wrk with benchmarks/gateway.lua, whose done() prints the figures as a JSON line."""
    command = [
        WRK,
        f"-t{THREADS}",
        f"-c{CONNECTIONS}",
        f"-d{SECONDS}s",
        # wrk's default gives up on an answer after 2 s and leaves it out of the latencies.
        "--timeout=30s",
        "-H",
        f"X-Dev-User: {MEMBER}",
    ]
    process = await asyncio.create_subprocess_exec(
        *command, "-s", str(LUA), url, "--", *script_args, stdout=asyncio.subprocess.PIPE
    )
    output, _ = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"wrk failed with {process.returncode}")
    figures = json.loads(output.decode().strip().splitlines()[-1])
    answered = figures["requests"]
    return Load(
        p50_ms=figures["p50_us"] / 1000,
        p99_ms=figures["p99_us"] / 1000,
        per_s=answered / (figures["duration_us"] / 1e6),
        failed=figures["status_errors"] + figures["socket_errors"],
        answers=answered,
    )


async def ghz(
    target: str, method: str, data: list[dict[str, Any]] | dict[str, Any], *args: str
) -> Load:
    """ghz straight to the booking service; each request takes the next data item."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as data_file:
        json.dump(data, data_file)
    command = [
        str(GHZ),
        *ghz_credentials(),
        f"--proto={PROTO}",
        f"--import-paths={REPO_ROOT / 'protos'}",
        f"--call={BOOKING}.{method}",
        f"--data-file={data_file.name}",
        f"--concurrency={CONNECTIONS}",
        "--format=json",
        *args,
        target,
    ]
    process = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE)
    output, _ = await process.communicate()
    os.unlink(data_file.name)
    if process.returncode not in (0, 1):  # 1: some calls failed; counted below
        raise RuntimeError(f"ghz failed with {process.returncode}")
    report = json.loads(output)
    details = report.get("details") or []
    latencies = [item["latency"] / 1e6 for item in details]
    return Load(
        p50_ms=percentile(latencies, 0.5),
        p99_ms=percentile(latencies, 0.99),
        per_s=len(details) / (report["total"] / 1e9),
        failed=sum(item["status"] != "OK" for item in details),
        answers=len(details),
    )


def _cpu_s(pid: int) -> float:
    """User and system CPU seconds a process has spent (Linux's /proc)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def settled(platform: Platform) -> None:
    """Waits until the services are about idle again: a load's checkouts leave work behind
    them (outbox rows to publish, events to consume, payments to open), which would
    otherwise be counted as the next load's CPU per answer. Idle, each spends some 20 ms of
    CPU a second; gives up after SETTLE_MAX_S and says so."""
    pids = [platform.pid(service) for service in SERVICES]
    waited = 0.0
    quiet_windows = 0
    while quiet_windows < 2 and waited < SETTLE_MAX_S:
        before = [_cpu_s(pid) for pid in pids]
        await asyncio.sleep(1.0)
        waited += 1.0
        busiest = max(_cpu_s(pid) - cpu for pid, cpu in zip(pids, before, strict=True))
        quiet_windows = quiet_windows + 1 if busiest < SETTLED_CPU_S_PER_S else 0
    if quiet_windows < 2:
        print(f"the services were still busy after {SETTLE_MAX_S:.0f} s; measuring anyway")


async def with_cpu(platform: Platform, load: Awaitable[Load], front: int | None = None) -> Load:
    """The load with the CPU its answers cost the front (the gateway, or `front`'s pid) and
    the booking service: on a shared machine latency says how busy it was, CPU per answer
    what the code costs. It starts once the services have settled."""
    await settled(platform)
    gateway, booking = front or platform.pid("gateway"), platform.pid("booking")
    before = _cpu_s(gateway), _cpu_s(booking)
    figures = await load
    answers = max(1, figures.answers)
    return replace(
        figures,
        gateway_cpu_ms=(_cpu_s(gateway) - before[0]) * 1000 / answers,
        booking_cpu_ms=(_cpu_s(booking) - before[1]) * 1000 / answers,
    )


LOADS = (
    "gateway_get",
    "uncached_get",
    "floor_get",
    "direct_get",
    "gateway_post",
    "floor_post",
    "direct_post",
)


@contextlib.asynccontextmanager
async def uncached_gateway(platform: Platform) -> AsyncIterator[tuple[str, int]]:
    """A second gateway process on the same services and database that keeps no booking
    (GATEWAY_BOOKING_CACHE_MS=0): its URL and pid."""
    env = replica_settings(platform.env, GATEWAY_BOOKING_CACHE_MS="0")
    async with gateway_process(env, platform.state / "uncached-gateway.log") as gateway:
        yield gateway.url, gateway.pid


async def _listening(url: str) -> None:
    async with httpx.AsyncClient(timeout=1) as client:
        for _ in range(300):
            try:
                await client.get(f"{url}/healthz")
                return
            except httpx.HTTPError:  # not listening yet
                await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def floor(platform: Platform) -> AsyncIterator[tuple[str, int]]:
    """benchmarks/gateway_floor.py in its own process: its URL and pid."""
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "benchmarks.gateway_floor",
        str(port),
        platform.address("BOOKING_GRPC_ADDRESS"),
        platform.env["GATEWAY_TLS_DIR"],
        cwd=REPO_ROOT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        await _listening(url)
        yield url, process.pid
    finally:
        process.kill()
        await process.wait()


async def one_round(platform: Platform, catalogue: Catalogue, number: int) -> dict[str, Load]:
    org, booking = catalogue.org_id, catalogue.booking_id
    booking_service = platform.address("BOOKING_GRPC_ADDRESS")
    slot_file, floor_slot_file = (
        _slot_file(catalogue.gateway_slots[number]),
        _slot_file(catalogue.floor_slots[number]),
    )
    checkouts = [
        {
            "org_id": org,
            "user": MEMBER,
            "idempotency_key": f"direct-{number}-{i}",
            "slot_id": slot,
            "party_size": 1,
            "payment_mode": "card",
        }
        for i, slot in enumerate(catalogue.direct_slots[number])
    ]
    try:
        async with floor(platform) as (floor_url, floor_pid):
            floor_get = await with_cpu(
                platform, wrk(f"{floor_url}/v1/orgs/{org}/bookings/{booking}", "get"), floor_pid
            )
            floor_post = await with_cpu(
                platform,
                wrk(
                    f"{floor_url}/v1/orgs/{org}/bookings", "post", *_posts(floor_slot_file, number)
                ),
                floor_pid,
            )
        async with uncached_gateway(platform) as (uncached_url, uncached_pid):
            uncached_get = await with_cpu(
                platform,
                wrk(f"{uncached_url}/v1/orgs/{org}/bookings/{booking}", "get"),
                uncached_pid,
            )
        return {
            "gateway_get": await with_cpu(
                platform, wrk(f"{platform.gateway}/v1/orgs/{org}/bookings/{booking}", "get")
            ),
            "uncached_get": uncached_get,
            "floor_get": floor_get,
            "direct_get": await with_cpu(
                platform,
                ghz(
                    booking_service,
                    "GetBooking",
                    {"org_id": org, "booking_id": booking},
                    f"--total={DIRECT_GETS}",
                ),
            ),
            "gateway_post": await with_cpu(
                platform,
                wrk(
                    f"{platform.gateway}/v1/orgs/{org}/bookings", "post", *_posts(slot_file, number)
                ),
            ),
            "floor_post": floor_post,
            "direct_post": await with_cpu(
                platform,
                ghz(booking_service, "Checkout", checkouts, f"--total={len(checkouts)}"),
            ),
        }
    finally:
        os.unlink(slot_file)
        os.unlink(floor_slot_file)


def _slot_file(slots: list[str]) -> str:
    """A file of free slot ids, one a line, for benchmarks/gateway.lua's POSTs."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as slot_file:
        slot_file.write("\n".join(slots))
    return slot_file.name


def _posts(slot_file: str, number: int) -> tuple[str, ...]:
    """benchmarks/gateway.lua's arguments for POSTs: their slots, and fresh keys."""
    return slot_file, str(THREADS), f"wrk-{number}-{uuid.uuid4().hex[:8]}"


async def open_round(
    platform: Platform, catalogue: Catalogue, number: int
) -> dict[str, OpenLoopRun]:
    """The open-loop loads, gateway and direct in turns so both see the machine as it is
    then, each once the services have settled."""
    runs: dict[str, OpenLoopRun] = {}
    async with floor(platform) as (floor_url, _):
        target = gateway_open.Target(
            gateway=platform.gateway,
            floor=floor_url,
            booking=platform.address("BOOKING_GRPC_ADDRESS"),
            tls_dir=platform.env["GATEWAY_TLS_DIR"],
            org_id=catalogue.org_id,
            member=MEMBER,
            booking_id=catalogue.booking_id,
        )
        for load in gateway_open.LOADS:
            await settled(platform)
            slots = catalogue.open_slots[number].get(load, [])
            tag = f"open-{load}-{number}-{uuid.uuid4().hex[:8]}"
            runs[load] = await gateway_open.run_load(
                load, target, slots, tag, OPEN_RATE, OPEN_SECONDS
            )
    return runs


def _median(rounds: list[dict[str, Load]], load: str, figure: str) -> float:
    return float(statistics.median(getattr(figures[load], figure) for figures in rounds))


def summarise(rounds: list[dict[str, Load]]) -> dict[str, float | int]:
    what = {
        "gateway_get": f"gateway GET a booking (wrk, {CONNECTIONS} connections, {THREADS} threads)",
        "uncached_get": "a gateway that keeps no booking: each GET asks the services (wrk)",
        "floor_get": "the floor: uvicorn, httptools, one GetBooking, nothing else (wrk)",
        "direct_get": f"booking GetBooking over gRPC (ghz, {CONNECTIONS} clients)",
        "gateway_post": "gateway POST a card checkout (wrk, fresh key, free slot)",
        "floor_post": "the floor: uvicorn, httptools, the body read, one Checkout (wrk)",
        "direct_post": "booking Checkout by card over gRPC (ghz, free slots)",
    }
    summary: dict[str, float | int] = {}
    print(f"medians of {len(rounds)} rounds")
    for load in LOADS:
        p50, p99 = _median(rounds, load, "p50_ms"), _median(rounds, load, "p99_ms")
        per_s = _median(rounds, load, "per_s")
        failed = sum(figures[load].failed for figures in rounds)
        gateway_cpu = _median(rounds, load, "gateway_cpu_ms")
        booking_cpu = _median(rounds, load, "booking_cpu_ms")
        print(f"{what[load]}: p50 {p50:.2f} ms, p99 {p99:.2f} ms, {per_s:.0f}/s, {failed} not OK")
        print(f"  CPU per answer: gateway {gateway_cpu:.2f} ms, booking {booking_cpu:.2f} ms")
        summary |= {
            f"{load}_p50_ms": round(p50, 2),
            f"{load}_p99_ms": round(p99, 2),
            f"{load}_per_s": round(per_s, 1),
            f"{load}_not_ok": failed,
            f"{load}_gateway_cpu_ms": round(gateway_cpu, 2),
            f"{load}_booking_cpu_ms": round(booking_cpu, 2),
        }
    for call in ("get", "post"):
        added = summary[f"gateway_{call}_p50_ms"] - summary[f"direct_{call}_p50_ms"]
        print(f"the gateway adds to a {call.upper()}'s p50: {added:.2f} ms")
        summary[f"added_{call}_p50_ms"] = round(added, 2)
    floor_added = summary["floor_get_p50_ms"] - summary["direct_get_p50_ms"]
    print(f"the floor adds to a GET's p50: {floor_added:.2f} ms")
    summary["floor_added_get_p50_ms"] = round(floor_added, 2)
    return summary | _acceptance(summary)


def _acceptance(summary: dict[str, float | int]) -> dict[str, float | int]:
    """The figures issue 37's acceptance names: the gateway's CPU per answer, and ratios of
    loads measured side by side in this run (absolute rates say how busy the machine was)."""

    def ratio(over: str, under: str) -> float:
        return round(summary[over] / summary[under], 2) if summary[under] else 0.0

    figures = {
        "get_gateway_cpu_ms": summary["gateway_get_gateway_cpu_ms"],
        "get_ratio_to_floor": ratio("gateway_get_per_s", "floor_get_per_s"),
        "get_booking_cpu_ratio_to_direct": ratio(
            "gateway_get_booking_cpu_ms", "direct_get_booking_cpu_ms"
        ),
        "get_uncached_gateway_cpu_ms": summary["uncached_get_gateway_cpu_ms"],
        "get_uncached_ratio_to_floor": ratio("uncached_get_per_s", "floor_get_per_s"),
        "post_gateway_cpu_ms": summary["gateway_post_gateway_cpu_ms"],
        "post_ratio_to_direct": ratio("gateway_post_per_s", "direct_post_per_s"),
        # The machine's speed moves the CPU per answer from run to run; the floor's in the
        # same run tells the code's share from the machine's.
        "post_gateway_cpu_over_floor": ratio(
            "gateway_post_gateway_cpu_ms", "floor_post_gateway_cpu_ms"
        ),
    }
    print(
        f"gateway GET: {figures['get_gateway_cpu_ms']:.2f} ms gateway CPU per answer, "
        f"x{figures['get_ratio_to_floor']:.2f} the floor's rate, booking CPU "
        f"x{figures['get_booking_cpu_ratio_to_direct']:.2f} a direct GetBooking's"
    )
    print(
        f"gateway POST: {figures['post_gateway_cpu_ms']:.2f} ms gateway CPU per answer, "
        f"x{figures['post_ratio_to_direct']:.2f} a direct Checkout's rate, "
        f"x{figures['post_gateway_cpu_over_floor']:.2f} the floor's CPU per POST"
    )
    return figures


async def _measure(infra: Infrastructure) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-gateway-") as state:
        async with started_platform(infra, Path(state) / "state") as platform:
            catalogue = await prepare(platform.gateway)
            rounds = [await one_round(platform, catalogue, number) for number in range(ROUNDS)]
            open_rounds = [
                await open_round(platform, catalogue, number) for number in range(ROUNDS)
            ]
    summary = summarise(rounds)
    print(json.dumps(summary | gateway_open.open_summary(open_rounds, OPEN_RATE)))


def main() -> None:
    if not GHZ.exists():
        raise SystemExit(f"{GHZ} is missing: `make bench-gateway` builds it")
    # asyncio's own loop, as the tests run platform.sh: under uvloop, reading the script's
    # output never saw its end once it had started the processes. The closed loads are
    # other processes (wrk, ghz); the open-loop driver runs in this loop, the same for the
    # gateway's loads and the direct ones, and says how late it sent at worst.
    asyncio.run(_measure(ensure_infrastructure()))


if __name__ == "__main__":
    main()
