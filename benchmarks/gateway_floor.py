"""The floor of an HTTP gateway in front of the booking service on this stack: the smallest
program that does the same work as the gateway's `GET /v1/orgs/{org}/bookings/{id}` minus
everything that is the gateway's own (no identity, no membership, no spans, no payment and
access reads, no FastAPI): uvicorn with httptools on uvloop, one grpc.aio GetBooking per
request over mutual TLS with the gateway's certificate (as the platform runs, the booking
service answers no one else), the reply's bytes as the body.

    python -m benchmarks.gateway_floor <port> <booking gRPC address> <gateway's TLS folder>

`make bench-gateway` runs it beside the gateway, so the figures say how much of what the
gateway adds to a call any Python HTTP front on these two cores adds.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import grpc
import uvicorn
import uvloop
from liftfit.booking.v1 import booking_pb2, booking_pb2_grpc

from servicekit.mtls import Identity, channel_credentials


def floor_app(booking_address: str, tls_dir: str) -> Any:
    stubs: dict[str, Any] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if "stub" not in stubs:  # made inside the running loop, as gRPC requires
            credentials = channel_credentials(Identity(Path(tls_dir)).read())
            stubs["stub"] = booking_pb2_grpc.BookingServiceStub(
                grpc.aio.secure_channel(booking_address, credentials)
            )
        parts = scope["path"].split("/")  # /v1/orgs/{org}/bookings/{id}
        if len(parts) != 6:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        org_id, booking_id = parts[3], parts[5]
        found = await stubs["stub"].GetBooking(
            booking_pb2.GetBookingRequest(org_id=org_id, booking_id=booking_id), timeout=3
        )
        body = found.SerializeToString()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})

    return app


async def serve(port: int, booking_address: str, tls_dir: str) -> None:
    config = uvicorn.Config(
        floor_app(booking_address, tls_dir), host="127.0.0.1", port=port, log_level="warning"
    )
    await uvicorn.Server(config).serve()


def main() -> None:
    port, booking_address, tls_dir = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    uvloop.run(serve(port, booking_address, tls_dir))


if __name__ == "__main__":
    main()
