"""The floor of an HTTP gateway in front of the booking service on this stack: the smallest
program that does the same work as the gateway's `GET /v1/orgs/{org}/bookings/{id}` and card
`POST /v1/orgs/{org}/bookings` minus everything that is the gateway's own (no identity, no
membership, no idempotency, no spans, no payment and access reads, no FastAPI): uvicorn with
httptools on uvloop, one grpc.aio GetBooking or Checkout per request over mutual TLS with the
gateway's certificate (as the platform runs, the booking service answers no one else), the
reply's bytes as the body. A POST's JSON body is read as the gateway's is, and its
X-Dev-User header names the member, as the gateway passes it on.

    python -m benchmarks.gateway_floor <port> <booking gRPC address> <gateway's TLS folder>

`make bench-gateway` runs it beside the gateway, so the figures say how much of what the
gateway adds to a call any Python HTTP front on these two cores adds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import grpc
import uvicorn
import uvloop
from liftfit.booking.v1 import booking_pb2, booking_pb2_grpc

from servicekit.mtls import Identity, channel_credentials

USER_METADATA = "x-liftfit-user"  # gateway_bff/upstream.py: the caller's user, for writes


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
        parts = scope["path"].split("/")  # /v1/orgs/{org}/bookings[/{id}]
        if scope["method"] == "POST" and len(parts) == 5:
            body = await _body(receive)
            answer = await _checkout(stubs["stub"], parts[3], scope["headers"], body)
            await _answer(send, 201, answer.SerializeToString())
        elif len(parts) == 6:
            ask = booking_pb2.GetBookingRequest(org_id=parts[3], booking_id=parts[5])
            found = await stubs["stub"].GetBooking(ask, timeout=3)
            await _answer(send, 200, found.SerializeToString())
        else:
            await _answer(send, 404, b"")

    return app


async def _body(receive: Any) -> bytes:
    body, more = b"", True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    return body


async def _checkout(stub: Any, org_id: str, headers: list[tuple[bytes, bytes]], body: bytes) -> Any:
    fields = dict(headers)
    user = fields.get(b"x-dev-user", b"").decode()
    wanted = json.loads(body)
    checkout = booking_pb2.CheckoutRequest(
        org_id=org_id,
        user=user,
        idempotency_key=fields.get(b"idempotency-key", b"").decode(),
        slot_id=wanted["slot_id"],
        party_size=wanted["party_size"],
        payment_mode=wanted["payment_mode"],
    )
    return await stub.Checkout(checkout, timeout=3, metadata=((USER_METADATA, user),))


async def _answer(send: Any, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": []})
    await send({"type": "http.response.body", "body": body})


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
