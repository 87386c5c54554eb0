"""The floor of a card checkout on this machine, under the load `make bench-booking` uses.

    make bench-floor        (.venv/bin/python -m benchmarks.checkout_floor)

`../shared/perf/checkout-floor` measures a bare grpc.aio server with Python clients and no
broker. This runs the same least-possible server with what the booking service cannot
leave out: ghz as the load generator (32 clients, as in `make bench-booking`, its CPU on
the same cores), the request parsed and the answer built with the contract's protobuf, and
each checkout's outbox row published to Kafka by a relay in the same process. No domain
model, no validation, no spans, no metrics, no ORM: it is a measurement, not a service.

Two modes, each on fresh slots:

- `statements`: the booking service's shape, two round trips: BEGIN with the key's claim
  and the slot's lock in one message, then the four writes with COMMIT in another;
- `function`: the whole checkout as one call of a server-side function.

The relay claims up to 1,000 rows, publishes them and deletes them in one transaction, and
rests 50 ms after a batch that was not full, as the service's relay does; the CPU sample is
taken once it has published every row. pgbench runs right after, on the same PostgreSQL.
The last line is one JSON object per mode, with the ratio each reaches.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import psycopg
from aiokafka import AIOKafkaProducer
from google.protobuf.timestamp_pb2 import Timestamp
from liftfit.booking.v1 import booking_pb2 as pb
from liftfit.booking.v1 import events_pb2 as ev

from benchmarks import cpu as bench_cpu
from benchmarks.booking import (
    CHECKOUTS,
    CLIENTS,
    GHZ,
    Run,
    _checkout,
    _ghz,
    pgbench_on_a_new_database,
)
from servicekit.kafka_access import client_security
from servicekit.runtime import run_event_loop
from tests.support.infrastructure import create_database, drop_database, ensure_infrastructure
from tests.support.topics import create_topics, delete_topics

SCHEMA = """
create table floor_attempts(k text primary key, booking_id uuid not null,
  created_at timestamptz not null default now());
create table floor_slots(slot_id uuid primary key, starts_at timestamptz not null,
  state text not null, holder uuid, price_amount bigint not null, currency text not null);
create table floor_bookings(booking_id uuid primary key, slot_id uuid not null,
  state text not null, price_amount bigint not null, currency text not null,
  hold_expires_at timestamptz, created_at timestamptz not null default now());
create unique index on floor_bookings(slot_id) where state in ('pending', 'confirmed');
create table floor_outbox(seq bigserial primary key, topic text not null, key text not null,
  payload bytea not null, traceparent text);
create table floor_timers(id uuid primary key, due timestamptz not null, kind text not null,
  subject uuid not null, state text not null default 'pending');
create index on floor_timers(due) where state = 'pending';
create function floor_checkout(p_key text, p_slot uuid, p_booking uuid, p_payload bytea,
  p_topic text) returns text language plpgsql as $$
declare s floor_slots%rowtype;
begin
  insert into floor_attempts(k, booking_id) values (p_key, p_booking) on conflict do nothing;
  if not found then return 'replayed'; end if;
  select * into s from floor_slots where slot_id = p_slot for update;
  if s.state is distinct from 'available' or s.starts_at <= now() then
    return 'unavailable';
  end if;
  insert into floor_bookings(booking_id, slot_id, state, price_amount, currency,
    hold_expires_at) values (p_booking, p_slot, 'pending', s.price_amount, s.currency,
    now() + interval '15 minutes');
  update floor_slots set state = 'held', holder = p_booking where slot_id = p_slot;
  insert into floor_outbox(topic, key, payload) values (p_topic, p_booking::text, p_payload);
  insert into floor_timers(id, due, kind, subject)
    values (gen_random_uuid(), now() + interval '15 minutes', 'release_unpaid_hold', p_booking);
  return 'ok';
end $$;
"""
_CLAIM = "INSERT INTO floor_attempts(k, booking_id) VALUES (%s, %s) ON CONFLICT DO NOTHING"
_LOCK = (
    "SELECT state, starts_at, price_amount, currency FROM floor_slots WHERE slot_id = %s FOR UPDATE"
)
_WRITES = (
    "INSERT INTO floor_bookings(booking_id, slot_id, state, price_amount, currency, "
    "hold_expires_at) VALUES (%s, %s, 'pending', %s, %s, %s)",
    "UPDATE floor_slots SET state = 'held', holder = %s WHERE slot_id = %s",
    "INSERT INTO floor_outbox(topic, key, payload) VALUES (%s, %s, %s)",
    "INSERT INTO floor_timers(id, due, kind, subject) VALUES (%s, %s, 'release_unpaid_hold', %s)",
)
_RELAY = (
    "DELETE FROM floor_outbox WHERE seq IN (SELECT seq FROM floor_outbox ORDER BY seq "
    "LIMIT 1000 FOR UPDATE SKIP LOCKED) RETURNING topic, key, payload"
)
MODES = ("statements", "function")


class Pool:
    """The least pool there is: connections in a queue."""

    def __init__(self, connections: list[psycopg.AsyncConnection[Any]]) -> None:
        self._idle: asyncio.Queue[psycopg.AsyncConnection[Any]] = asyncio.Queue()
        for connection in connections:
            self._idle.put_nowait(connection)

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        connection = await self._idle.get()
        try:
            yield connection
        finally:
            self._idle.put_nowait(connection)


Decide = Callable[[psycopg.AsyncConnection[Any], pb.CheckoutRequest, str, bytes], Awaitable[str]]


def _by_statements(topic: str) -> Decide:
    async def decide(
        connection: psycopg.AsyncConnection[Any],
        request: pb.CheckoutRequest,
        booking: str,
        payload: bytes,
    ) -> str:
        binder = psycopg.AsyncClientCursor(connection)
        claim = binder.mogrify(_CLAIM, (request.idempotency_key, booking))
        lock = binder.mogrify(_LOCK, (request.slot_id,))
        cursor = await connection.execute(f"BEGIN;{claim};{lock}", prepare=False)
        cursor.nextset()  # past BEGIN, to the claim
        claimed = cursor.rowcount == 1
        cursor.nextset()
        row = await cursor.fetchone()
        if not claimed or row is None or row[0] != "available":
            await connection.execute("ROLLBACK")
            return "unavailable"
        hold = datetime.now(UTC) + timedelta(minutes=15)
        values = (
            (booking, request.slot_id, row[2], row[3], hold),
            (booking, request.slot_id),
            (topic, booking, payload),
            (str(uuid.uuid4()), hold, booking),
        )
        writes = [binder.mogrify(sql, args) for sql, args in zip(_WRITES, values, strict=True)]
        await connection.execute(";".join([*writes, "COMMIT"]), prepare=False)
        return "ok"

    return decide


def _by_function(topic: str) -> Decide:
    async def decide(
        connection: psycopg.AsyncConnection[Any],
        request: pb.CheckoutRequest,
        booking: str,
        payload: bytes,
    ) -> str:
        params = (request.idempotency_key, request.slot_id, booking, payload, topic)
        cursor = await connection.execute("SELECT floor_checkout(%s, %s, %s, %s, %s)", params)
        row = await cursor.fetchone()
        return str(row[0]) if row else "unavailable"

    return decide


def _answer_template() -> pb.BookingReply:
    """An answer the size of the booking service's (its fields filled), so ghz reads as
    much per call as it does there."""
    at = Timestamp(seconds=1_800_000_000)
    text = "x" * 36
    booking = pb.Booking(
        booking_id=text,
        org_id=text,
        user="bench",
        state="pending",
        slot=pb.Slot(slot_id=text, space_id=text, starts_at=at, ends_at=at),
        party_size=1,
        payment_mode="card",
        price=ev.Money(amount=45000, currency="CZK"),
        window=ev.AccessWindow(valid_from=at, valid_to=at),
        terms_version="2026-11",
        trace_id="0" * 32,
        created_at=at,
        updated_at=at,
        hold_expires_at=at,
    )
    return pb.BookingReply(booking=booking)


def _server(pool: Pool, decide: Decide) -> grpc.aio.Server:
    template = _answer_template()

    async def checkout(request: pb.CheckoutRequest, context: Any) -> pb.BookingReply:
        booking = str(uuid.uuid4())
        payload = request.SerializeToString()  # an event of about the same size
        async with pool.connection() as connection:
            outcome = await decide(connection, request, booking, payload)
        if outcome != "ok":
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, outcome)
        answer = pb.BookingReply()
        answer.CopyFrom(template)
        answer.booking.booking_id = booking
        return answer

    handler = grpc.method_handlers_generic_handler(
        "liftfit.booking.v1.BookingService",
        {
            "Checkout": grpc.unary_unary_rpc_method_handler(
                checkout,
                request_deserializer=pb.CheckoutRequest.FromString,
                response_serializer=pb.BookingReply.SerializeToString,
            )
        },
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    return server


async def _relay(dsn: str, producer: AIOKafkaProducer, stopping: asyncio.Event) -> None:
    async with await psycopg.AsyncConnection.connect(dsn) as connection:
        while not stopping.is_set():
            async with connection.transaction():
                rows = await (await connection.execute(_RELAY, prepare=True)).fetchall()
                sent = [
                    await producer.send(topic, payload, key.encode())
                    for topic, key, payload in rows
                ]
                for delivery in sent:
                    await delivery
            if len(rows) < 1000:
                await asyncio.sleep(0.05)


async def _drained(dsn: str) -> None:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as connection:
        while (await (await connection.execute("SELECT count(*) FROM floor_outbox")).fetchone())[0]:  # type: ignore[index]
            await asyncio.sleep(0.05)


async def _slots(dsn: str, count: int) -> list[str]:
    starts = datetime.now(UTC) + timedelta(days=7)
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as connection:
        cursor = await connection.execute(
            "INSERT INTO floor_slots SELECT gen_random_uuid(), %s + n * interval '1 hour', "
            "'available', NULL, 45000, 'CZK' FROM generate_series(1, %s) n RETURNING slot_id",
            (starts, count),
        )
        return [str(row[0]) for row in await cursor.fetchall()]


@dataclass(frozen=True)
class Mode:
    name: str
    run: Run
    cpu: bench_cpu.Spent | None

    def figures(self, tps: float) -> dict[str, Any]:
        ok = sum(status == "OK" for status in self.run.statuses)
        rate = ok / self.run.elapsed
        cpu = self.cpu
        print(f"floor, {self.name}: {rate:.0f} checkouts/s ({ok} of {len(self.run.statuses)} OK)")
        print(f"  p50 {self.run.percentile_ms(0.5):.1f} ms; ratio to pgbench {rate / tps:.2f}")
        if cpu is not None:
            print(f"  {str(cpu).replace(bench_cpu.SELF, 'floor server and relay')}")
        return {
            "mode": self.name,
            "checkouts_per_s": round(rate, 1),
            "ratio": round(rate / tps, 3),
            "server_cpu_ms_per_checkout": round(cpu.ms_per_unit.get(bench_cpu.SELF, 0.0), 2)
            if cpu
            else None,
            "machine_cpu_ms_per_checkout": round(cpu.machine_ms, 2) if cpu else None,
        }


async def measure_mode(dsn: str, kafka: str, topic: str, name: str) -> Mode:
    decide = _by_function(topic) if name == "function" else _by_statements(topic)
    connect = psycopg.AsyncConnection.connect
    connections = [await connect(dsn, autocommit=True) for _ in range(CLIENTS)]
    server = _server(Pool(connections), decide)
    port = server.add_insecure_port("127.0.0.1:0")
    producer = AIOKafkaProducer(bootstrap_servers=kafka, linger_ms=5, **client_security())
    await producer.start()
    stopping = asyncio.Event()
    relay = asyncio.create_task(_relay(dsn, producer, stopping))
    await server.start()
    try:
        slots = await _slots(dsn, CHECKOUTS)
        org = str(uuid.uuid4())
        data = [_checkout(org, slot, f"{name}-{i}") for i, slot in enumerate(slots)]
        before = bench_cpu.sample()
        load = (f"--concurrency={CLIENTS}", f"--total={CHECKOUTS}")
        # Plaintext, as the floor serves: what mutual TLS adds is bench-booking's
        # "without the boundary" figure beside its platform's.
        run = await _ghz(f"127.0.0.1:{port}", data, *load, boundary=False)
        if not any(status == "OK" for status in run.statuses):
            raise RuntimeError(f"floor, {name}: no checkout succeeded: {set(run.statuses)}")
        await _drained(dsn)  # the relay's work for these checkouts is counted too
        return Mode(name, run, bench_cpu.spent(before, bench_cpu.sample(), len(run.latencies)))
    finally:
        stopping.set()
        await relay
        await server.stop(None)
        await producer.stop()
        for connection in connections:
            await connection.close()


async def _measure(admin_dsn: str, kafka: str) -> None:
    name = f"bench_floor_{uuid.uuid4().hex[:8]}"
    dsn = create_database(admin_dsn, name)
    try:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as connection:
            await connection.execute(SCHEMA)
        prefix = await create_topics(kafka, {"floor.events": 3})
        try:
            topic = f"{prefix}floor.events"
            modes = [await measure_mode(dsn, kafka, topic, name) for name in MODES]
        finally:
            await delete_topics(kafka, prefix, ["floor.events"])  # as bench-booking does
        tps = pgbench_on_a_new_database(admin_dsn)
    finally:
        drop_database(admin_dsn, name)
    print(f"pgbench TPC-B-like, 32 clients, scale 10: {tps:.0f} tps")
    figures = [mode.figures(tps) for mode in modes]
    print(json.dumps({"pgbench_tps": round(tps, 1), "modes": figures}))


def main() -> None:
    if not GHZ.exists():
        raise SystemExit(f"{GHZ} is missing: `make bench-floor` builds it")
    infra = ensure_infrastructure()
    run_event_loop(_measure(infra.pg_admin_dsn, infra.kafka_bootstrap))


if __name__ == "__main__":
    main()
