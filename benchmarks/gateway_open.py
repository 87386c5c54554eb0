"""The open-loop loads of `make bench-gateway` (benchmarks/open_loop.py drives them): the
gateway's `GET /v1/orgs/{org}/bookings/{id}` and card checkout POST over HTTP, and the
booking service's GetBooking and Checkout over gRPC, from this one Python process.

Both sides are asked by the same kind of client, asyncio in this process, so its own cost
is about the same on both and mostly cancels in what the gateway adds: for HTTP a few kept
connections speaking h11 over asyncio streams (no pool, no redirects, no cookies: a
request's bytes out and its answer's bytes in), for gRPC one grpc.aio channel with the
gateway's mutual-TLS identity, as the gateway itself calls booking. The connections are
open before the clock starts, so no request pays for a handshake.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import statistics
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
import h11
from liftfit.booking.v1 import booking_pb2, booking_pb2_grpc

from benchmarks.open_loop import OpenLoopRun, Send, open_loop
from servicekit.mtls import Identity, channel_credentials

USER_METADATA = "x-liftfit-user"  # gateway_bff/upstream.py: the caller's user, for writes
DEADLINE_S = 10.0
READ_BYTES = 65536


class HttpConnection:
    """One kept HTTP/1.1 connection: one request at a time, the answer read to its end."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.protocol = h11.Connection(h11.CLIENT)

    async def exchange(self, request: h11.Request, body: bytes) -> int:
        """Sends the request, reads its whole answer, returns the status."""
        out = self.protocol.send(request) or b""
        if body:
            out += self.protocol.send(h11.Data(data=body)) or b""
        self.writer.write(out + (self.protocol.send(h11.EndOfMessage()) or b""))
        status = 0
        while True:
            event = self.protocol.next_event()
            if event is h11.NEED_DATA:
                self.protocol.receive_data(await self.reader.read(READ_BYTES))
            elif isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.EndOfMessage):
                self.protocol.start_next_cycle()
                return status
            elif isinstance(event, h11.ConnectionClosed):
                raise ConnectionError("the server closed the connection")

    def close(self) -> None:
        self.writer.close()


class HttpClient:
    """A few kept connections; a request takes an idle one, or waits for one (that wait is
    part of its latency: the schedule does not wait)."""

    def __init__(self, host: str, port: int, connections: int) -> None:
        self.host, self.port, self.count = host, port, connections
        self.idle: asyncio.Queue[HttpConnection] = asyncio.Queue()

    async def open(self) -> None:
        for _ in range(self.count):
            self.idle.put_nowait(await self._connect())

    async def _connect(self) -> HttpConnection:
        return HttpConnection(*await asyncio.open_connection(self.host, self.port))

    async def request(
        self, method: str, path: str, headers: Sequence[tuple[str, str]], body: bytes = b""
    ) -> int:
        connection = await self.idle.get()
        fields = [("Host", f"{self.host}:{self.port}"), *headers]
        if body:
            fields += [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        try:
            return await connection.exchange(
                h11.Request(method=method, target=path, headers=fields), body
            )
        except (OSError, h11.ProtocolError):
            connection.close()  # this request failed; the next one gets a fresh connection
            connection = await self._connect()
            raise
        finally:
            self.idle.put_nowait(connection)

    async def close(self) -> None:
        while not self.idle.empty():
            self.idle.get_nowait().close()


@dataclass(frozen=True)
class Target:
    """Where the loads go and what they ask for: the gateway's address, the floor's,
    booking's, the gateway's certificate folder, the organisation and its member, and a
    booking to read."""

    gateway: str  # http://host:port
    floor: str  # http://host:port of benchmarks/gateway_floor.py
    booking: str  # host:port
    tls_dir: str
    org_id: str
    member: str
    booking_id: str


@contextlib.asynccontextmanager
async def http_client(gateway: str, connections: int) -> AsyncIterator[HttpClient]:
    host, port = gateway.removeprefix("http://").rsplit(":", 1)
    client = HttpClient(host, int(port), connections)
    await client.open()
    try:
        yield client
    finally:
        await client.close()


@contextlib.asynccontextmanager
async def booking_stub(target: Target) -> AsyncIterator[booking_pb2_grpc.BookingServiceAsyncStub]:
    credentials = channel_credentials(Identity(Path(target.tls_dir)).read())
    async with grpc.aio.secure_channel(target.booking, credentials) as channel:
        await asyncio.wait_for(channel.channel_ready(), DEADLINE_S)
        yield booking_pb2_grpc.BookingServiceStub(channel)


def gateway_get(client: HttpClient, target: Target) -> Send:
    path = f"/v1/orgs/{target.org_id}/bookings/{target.booking_id}"
    headers = [("X-Dev-User", target.member)]

    async def send(_: int) -> bool:
        return await client.request("GET", path, headers) == 200

    return send


def gateway_post(client: HttpClient, target: Target, slots: Sequence[str], tag: str) -> Send:
    """The i-th request checks out the i-th slot by card with a fresh Idempotency-Key."""
    path = f"/v1/orgs/{target.org_id}/bookings"

    async def send(number: int) -> bool:
        body = {"slot_id": slots[number], "party_size": 1, "payment_mode": "card"}
        headers = [("X-Dev-User", target.member), ("Idempotency-Key", f"{tag}-{number}")]
        return await client.request("POST", path, headers, json.dumps(body).encode()) == 201

    return send


def direct_get(stub: booking_pb2_grpc.BookingServiceAsyncStub, target: Target) -> Send:
    ask = booking_pb2.GetBookingRequest(org_id=target.org_id, booking_id=target.booking_id)

    async def send(_: int) -> bool:
        await stub.GetBooking(ask, timeout=DEADLINE_S)
        return True

    return send


def direct_post(
    stub: booking_pb2_grpc.BookingServiceAsyncStub, target: Target, slots: Sequence[str], tag: str
) -> Send:
    """As the gateway calls it: the member in the request and in the call's metadata."""
    metadata = ((USER_METADATA, target.member),)

    async def send(number: int) -> bool:
        checkout = booking_pb2.CheckoutRequest(
            org_id=target.org_id,
            user=target.member,
            idempotency_key=f"{tag}-{number}",
            slot_id=slots[number],
            party_size=1,
            payment_mode="card",
        )
        await stub.Checkout(checkout, timeout=DEADLINE_S, metadata=metadata)
        return True

    return send


HTTP_CONNECTIONS = 4  # at 20/s and some ms an answer, rarely more than one is in flight
LOADS = ("gateway_get", "floor_get", "direct_get", "gateway_post", "floor_post", "direct_post")
FRONTS = ("gateway", "floor")  # what stands before booking, compared with the direct call


async def run_load(
    load: str, target: Target, slots: Sequence[str], tag: str, rate: float, seconds: float
) -> OpenLoopRun:
    """One of LOADS for `seconds` at `rate`; a POST takes slots[i] for its i-th request."""
    front, call = load.split("_")
    if front in FRONTS:
        url = target.gateway if front == "gateway" else target.floor
        async with http_client(url, HTTP_CONNECTIONS) as client:
            send = (
                gateway_get(client, target)
                if call == "get"
                else gateway_post(client, target, slots, tag)
            )
            return await open_loop(send, rate, seconds)
    async with booking_stub(target) as stub:
        send = (
            direct_get(stub, target)
            if load == "direct_get"
            else direct_post(stub, target, slots, tag)
        )
        return await open_loop(send, rate, seconds)


def _median(rounds: Sequence[dict[str, OpenLoopRun]], load: str, figure: str) -> float:
    return float(statistics.median(getattr(run[load], figure) for run in rounds))


def open_summary(rounds: Sequence[dict[str, OpenLoopRun]], rate: float) -> dict[str, float]:
    """Medians over the rounds of each load's p50 and p99 (from the due times), and what the
    gateway adds to each: its median less the direct call's. Prints them."""
    label = f"{rate:g}rps"
    figures: dict[str, float] = {}
    print(f"open loop at {rate:g} requests/s, latency from each request's due time")
    for load in LOADS:
        p50, p99 = _median(rounds, load, "p50_ms"), _median(rounds, load, "p99_ms")
        failed = sum(run[load].failed for run in rounds)
        late = max(run[load].latest_send_ms for run in rounds)
        client = _median(rounds, load, "driver_cpu_ms")
        print(
            f"  {load}: p50 {p50:.2f} ms, p99 {p99:.2f} ms, {failed} not OK, "
            f"sent at worst {late:.1f} ms late, the client's CPU {client:.2f} ms a request"
        )
        figures |= {
            f"{load}_p50_ms_at_{label}": round(p50, 2),
            f"{load}_p99_ms_at_{label}": round(p99, 2),
            f"{load}_not_ok_at_{label}": failed,
            f"{load}_client_cpu_ms_at_{label}": round(client, 2),
        }
    for front, call in itertools.product(FRONTS, ("get", "post")):
        name = f"{call}_added" if front == "gateway" else f"{call}_floor_added"
        for share in ("p50", "p99"):
            added = (
                figures[f"{front}_{call}_{share}_ms_at_{label}"]
                - figures[f"direct_{call}_{share}_ms_at_{label}"]
            )
            figures[f"{name}_{share}_ms_at_{label}"] = round(added, 2)
        print(
            f"  the {front} adds to a {call.upper()}: "
            f"p50 {figures[f'{name}_p50_ms_at_{label}']:.2f} ms, "
            f"p99 {figures[f'{name}_p99_ms_at_{label}']:.2f} ms"
        )
    return figures
