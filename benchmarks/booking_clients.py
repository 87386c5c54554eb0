"""The benchmark's 32 gRPC clients, in their own process so they do not take the server's
CPU: `python -m benchmarks.booking_clients TARGET SECONDS SLOTS_FILE` prints the
latencies of the checkouts it made and the time they took, as JSON (seconds)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from liftfit.booking.v1 import booking_pb2 as pb
from liftfit.booking.v1.booking_pb2_grpc import BookingServiceStub

from servicekit.grpc_server import channel

if TYPE_CHECKING:  # the async stub exists only in the type stubs
    from liftfit.booking.v1.booking_pb2_grpc import BookingServiceAsyncStub

CLIENTS = 32
BENCH_ORG = str(uuid.uuid4())  # one organisation books every slot


async def _client(stub: BookingServiceAsyncStub, slots: list[str], deadline: float) -> list[float]:
    latencies = []
    while slots and time.perf_counter() < deadline:
        request = pb.CheckoutRequest(
            org_id=BENCH_ORG,
            user="bench",
            idempotency_key=uuid.uuid4().hex,
            slot_id=slots.pop(),
            party_size=1,
            payment_mode="card",
        )
        began = time.perf_counter()
        await stub.Checkout(request)
        latencies.append(time.perf_counter() - began)
    return latencies


async def main(target: str, seconds: float, slots: list[str]) -> dict[str, object]:
    async with channel(target) as grpc_channel:
        stub = BookingServiceStub(grpc_channel)
        began = time.perf_counter()
        deadline = began + seconds
        runs = await asyncio.gather(*(_client(stub, slots, deadline) for _ in range(CLIENTS)))
        elapsed = time.perf_counter() - began
    return {"latencies": [latency for run in runs for latency in run], "elapsed": elapsed}


if __name__ == "__main__":
    target, seconds, slots_file = sys.argv[1], float(sys.argv[2]), Path(sys.argv[3])
    print(json.dumps(asyncio.run(main(target, seconds, json.loads(slots_file.read_text())))))
