"""The floor under the card saga on this stack: what the work one saga asks of the platform
costs when the smallest programs on the same libraries do it, with nothing of ours around.

    .venv/bin/python -m benchmarks.saga_floor     (make bench-saga runs it after pgbench)

Each kind of work is done alone, many times, 16 at once unless said otherwise, in this one
process on uvloop (as the services run), with the platform stopped:

- transaction: BEGIN, a locked read of one row, its update, COMMIT, on psycopg, 16
  connections at once. The inbox's marker has this shape; most of the saga's
  transactions have more statements, none has fewer than one.
- grpc_call: one unary call over mutual TLS with the platform's certificates, grpc.aio at
  both ends, 100 bytes each way (no protobuf, no interceptor, no span).
- http_request: one GET answered by uvicorn with httptools (the gateway's and the
  sandboxes' server) to an httpx client on a kept connection, 500 bytes of JSON.
- record_produced: one 500-byte record sent by aiokafka (all replicas acknowledging, at the
  broker's SASL/SCRAM), one at a time: the saga's records come a few a second per topic,
  each in a produce request of its own, not in the batches a stream would fill.
- delivery: one record read by an aiokafka consumer group as it arrives (so one a fetch),
  its offset committed after each fetch: what a produce-and-consume run costs over a
  produce-only run.
- mail: one message composed as notify composes it (the email package, text and HTML
  alternatives) and sent with aiosmtplib on a new connection to an aiosmtpd server that
  parses it as the mail sandbox does.

Three rounds of all six; the price of each is its median over them. A round's price is
the machine's CPU (every core's busy time from /proc/stat, whoever spent it: this
process, PostgreSQL, the broker, the kernel) over its run, less what the machine spent
idle at the same rate just before, per unit done; so nothing else may run meanwhile.
`price()` turns the prices and one saga's counts (make bench-saga's units_per_saga) into
the CPU one saga would cost at the floor. Left out, so the floor lies below any platform:
the spans and their export, the logs, the metrics, validation, the domain's own code.
"""

from __future__ import annotations

import asyncio
import email
import json
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from email.utils import formatdate
from pathlib import Path
from typing import Any

import aiosmtplib
import grpc
import httpx
import psycopg
import uvicorn
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiosmtpd.smtp import SMTP, Envelope, Session

from benchmarks import cpu
from servicekit.kafka_access import client_security
from servicekit.mtls import Identity, channel_credentials, server_credentials
from servicekit.runtime import run_event_loop
from tests.support import tls
from tests.support.infrastructure import create_database, drop_database, ensure_infrastructure
from tests.support.sandboxes import free_port
from tests.support.topics import create_topics, delete_topics

AT_ONCE = 16
ROUNDS = 3
IDLE_S = 2.0
COUNTS = {
    "transaction": 6000,
    "grpc_call": 6000,
    "http_request": 4000,
    "record_produced": 2000,
    "delivery": 2000,
    "mail": 400,
}
ROWS = 1000
TOPIC = "floor.saga"
BODY = json.dumps({"data": "x" * 480}).encode()
Work = Callable[[int], Awaitable[None]]  # the i-th unit


# Pure: what one saga costs at the floor, tested in tests/benchmarks


def price(unit_ms: dict[str, float], per_saga: dict[str, float]) -> dict[str, float]:
    """Machine CPU per saga (ms) at the floor, by kind of work, from each kind's price and
    one saga's counts: its transactions (`tx_per_saga`), the records it publishes
    (`kafka_records_per_saga`) and the parts' own counts (bench-saga's units_per_saga)."""
    http = sum(
        per_saga.get(k, 0.0)
        for k in ("gateway_http_requests", "provider_http_calls", "sandbox_requests")
    )
    wanted = {
        "transaction": per_saga.get("tx_per_saga", 0.0),
        "grpc_call": per_saga.get("grpc_calls", 0.0),
        "http_request": http,
        "record_produced": per_saga.get("kafka_records_per_saga", 0.0),
        "delivery": per_saga.get("deliveries", 0.0),
        "mail": per_saga.get("mails", 0.0),
    }
    return {kind: unit_ms[kind] * count for kind, count in wanted.items()}


def floor_ratio(ms_per_saga: float, cores: int, tx_per_saga: float, pgbench_tps: float) -> float:
    """The ratio bench-saga reports, for a platform that spent only the floor's CPU and
    kept every core busy: sagas/s over (pgbench tps / transactions per saga)."""
    if ms_per_saga <= 0 or pgbench_tps <= 0:
        return 0.0
    return cores * 1000 / ms_per_saga * tx_per_saga / pgbench_tps


# Measuring


@dataclass
class Machine:
    """The machine's busy time per second with nothing of ours running."""

    idle_ms_per_s: float = 0.0

    async def settle(self) -> None:
        before = cpu.sample()
        await asyncio.sleep(IDLE_S)
        after = cpu.sample()
        spent = cpu.spent(before, after, 1)
        if before and after and spent:
            self.idle_ms_per_s = spent.machine_ms / (after.wall - before.wall)

    async def priced(self, count: int, work: Work, at_once: int = AT_ONCE) -> float:
        """Machine CPU (ms) per unit of `count` units done `at_once` at a time."""
        return await self.spent_on(count, _spread(count, work, at_once))

    async def spent_on(self, count: int, job: Awaitable[None]) -> float:
        """Machine CPU (ms) per unit while `job` does `count` units."""
        before = cpu.sample()
        await job
        after = cpu.sample()
        spent = cpu.spent(before, after, count)
        if before is None or after is None or spent is None:
            raise SystemExit("the floor reads the machine's CPU from /proc: Linux only")
        idle_ms = self.idle_ms_per_s * (after.wall - before.wall) / count
        return max(0.0, spent.machine_ms - idle_ms)


async def _spread(count: int, work: Work, at_once: int) -> None:
    numbers = iter(range(count))

    async def worker() -> None:
        for i in numbers:
            await work(i)

    await asyncio.gather(*(worker() for _ in range(at_once)))


async def transactions(machine: Machine, dsn: str) -> float:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as setup:
        await setup.execute("DROP TABLE IF EXISTS floor_rows")
        await setup.execute("CREATE TABLE floor_rows (id int PRIMARY KEY, n int NOT NULL)")
        await setup.execute(
            "INSERT INTO floor_rows SELECT g, 0 FROM generate_series(0, %s) g", (ROWS,)
        )
    connections = [
        await psycopg.AsyncConnection.connect(dsn, autocommit=True) for _ in range(AT_ONCE)
    ]
    free = asyncio.Queue[psycopg.AsyncConnection[Any]]()
    for connection in connections:
        free.put_nowait(connection)

    async def one(i: int) -> None:
        connection = await free.get()
        try:
            async with connection.transaction():
                row = i % ROWS
                await connection.execute(
                    "SELECT n FROM floor_rows WHERE id = %s FOR UPDATE", (row,)
                )
                await connection.execute("UPDATE floor_rows SET n = n + 1 WHERE id = %s", (row,))
        finally:
            free.put_nowait(connection)

    try:
        return await machine.priced(COUNTS["transaction"], one)
    finally:
        for connection in connections:
            await connection.close()


async def grpc_calls(machine: Machine) -> float:
    async def echo(request: bytes, _context: Any) -> bytes:
        return request

    server = grpc.aio.server()
    server.add_generic_rpc_handlers(
        [
            grpc.method_handlers_generic_handler(
                "floor.Floor", {"Echo": grpc.unary_unary_rpc_method_handler(echo)}
            )
        ]
    )
    port = server.add_secure_port(
        "127.0.0.1:0", server_credentials(Identity(Path(tls.folder("booking"))))
    )
    await server.start()
    credentials = channel_credentials(Identity(Path(tls.folder("gateway"))).read())
    channel = grpc.aio.secure_channel(f"127.0.0.1:{port}", credentials)
    call = channel.unary_unary("/floor.Floor/Echo", None, None)
    request = b"x" * 100
    try:
        await call(request, timeout=5)  # the handshake, outside the count

        async def one(_i: int) -> None:
            await call(request, timeout=5)

        return await machine.priced(COUNTS["grpc_call"], one)
    finally:
        await channel.close(None)
        await server.stop(None)


async def http_requests(machine: Machine) -> float:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": BODY})

    port = free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        http="httptools",
        loop="none",
        access_log=False,
        log_level="warning",
        lifespan="off",
    )
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    limits = httpx.Limits(max_connections=AT_ONCE, max_keepalive_connections=AT_ONCE)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", limits=limits) as client:
            await client.get("/ready")

            async def one(i: int) -> None:
                answer = await client.get(f"/v1/things/{i}")
                answer.raise_for_status()

            return await machine.priced(COUNTS["http_request"], one)
    finally:
        server.should_exit = True
        await serving


async def records(machine: Machine, bootstrap: str) -> tuple[float, float]:
    """The price of a record produced, and of one delivery of it."""
    prefix = await create_topics(bootstrap, {TOPIC: 3})
    topic = prefix + TOPIC
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, **client_security()
    )
    await producer.start()
    try:

        async def send(i: int) -> None:
            await producer.send_and_wait(topic, BODY, key=str(i).encode())

        await send(0)
        produced = await machine.priced(COUNTS["record_produced"], send, 1)
        both = await _produced_and_delivered(machine, bootstrap, topic, send)
        return produced, max(0.0, both - produced)
    finally:
        await producer.stop()
        await delete_topics(bootstrap, prefix, [TOPIC])


async def _produced_and_delivered(
    machine: Machine, bootstrap: str, topic: str, send: Work
) -> float:
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"floor-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="latest",
        enable_auto_commit=False,
        **client_security(),
    )
    await consumer.start()
    wanted = COUNTS["delivery"]
    read = 0
    while not consumer.assignment():
        await consumer.getmany(timeout_ms=100)
    for partition in consumer.assignment():
        await consumer.seek_to_end(partition)
        await consumer.position(partition)  # from here on, whatever is sent now

    async def consume() -> None:
        nonlocal read
        while read < wanted:
            batches = await consumer.getmany(timeout_ms=500)
            read += sum(len(b) for b in batches.values())
            if batches:
                await consumer.commit()

    async def both() -> None:
        reading = asyncio.create_task(consume())
        await _spread(wanted, send, 1)
        await reading

    try:
        return await machine.spent_on(wanted, both())
    finally:
        await consumer.stop()


class _Parsing:
    """The receiving end: parses each mail as the mail sandbox does."""

    async def handle_DATA(self, _server: SMTP, _session: Session, envelope: Envelope) -> str:
        raw = (envelope.original_content or b"").replace(b"\r\n", b"\n")
        message = email.message_from_bytes(raw, policy=policy.default)
        assert isinstance(message, EmailMessage)
        headers = [(name, str(value)) for name, value in message.items()]
        assert headers
        for subtype in ("plain", "html"):
            part = message.get_body(preferencelist=(subtype,))
            if part is not None:
                part.get_content()
        return "250 OK"


def _mail(i: int) -> bytes:
    message = EmailMessage()
    message["From"] = "bookings@liftfit.example"
    message["To"] = f"customer-{i}@example.test"
    message["Subject"] = "Your booking is confirmed"
    message["Message-ID"] = f"<{uuid.uuid4().hex}@liftfit.example>"
    message["Date"] = formatdate(usegmt=True)
    message.set_content("Your studio is booked. " * 20)
    message.add_alternative("<p>Your studio is booked.</p>" * 20, subtype="html")
    return message.as_bytes(policy=policy.SMTP)


async def mails(machine: Machine) -> float:
    handler = _Parsing()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: SMTP(handler), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]

    async def one(i: int) -> None:
        client = aiosmtplib.SMTP(hostname="127.0.0.1", port=port, start_tls=False, timeout=10)
        data = _mail(i)
        await client.connect()
        await client.mail("bookings@liftfit.example")
        await client.rcpt(f"customer-{i}@example.test")
        await client.data(data)
        await client.quit()

    try:
        return await machine.priced(COUNTS["mail"], one)
    finally:
        server.close()


async def measure(dsn: str, bootstrap: str) -> dict[str, float]:
    """Each kind's price, the median of ROUNDS rounds, and the idle machine's rate."""
    machine = Machine()
    rounds: list[dict[str, float]] = []
    for _ in range(ROUNDS):
        await machine.settle()
        prices = {"transaction": await transactions(machine, dsn)}
        prices["grpc_call"] = await grpc_calls(machine)
        prices["http_request"] = await http_requests(machine)
        prices["record_produced"], prices["delivery"] = await records(machine, bootstrap)
        prices["mail"] = await mails(machine)
        rounds.append(prices)
    medians = {kind: statistics.median(r[kind] for r in rounds) for kind in rounds[0]}
    return {"idle_machine_ms_per_s": machine.idle_ms_per_s, **medians}


def main() -> None:
    infra = ensure_infrastructure()
    name = f"bench_saga_floor_{uuid.uuid4().hex[:8]}"
    dsn = create_database(infra.pg_admin_dsn, name)
    started = time.monotonic()
    try:
        prices = run_event_loop(measure(dsn, infra.kafka_bootstrap))
    finally:
        drop_database(infra.pg_admin_dsn, name)
    print(
        f"saga floor, machine CPU per unit of work, on uvloop ({time.monotonic() - started:.0f} s):"
    )
    for kind, ms in prices.items():
        print(f"  {kind}: {ms:.3f} ms")
    print(json.dumps({kind: round(ms, 4) for kind, ms in prices.items()}))


if __name__ == "__main__":
    main()
