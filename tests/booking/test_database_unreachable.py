"""With its database out of reach the service still starts, answers UNAVAILABLE (which
clients retry) without internals, and every connection it makes carries time-outs."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from liftfit.booking.v1 import booking_pb2 as pb
from sqlalchemy import text

from servicekit.grpc_server import reason_of
from tests.booking.conftest import StartBooking
from tests.booking.harness import BookingHarness, new_id

CLOSED_PORT_URL = "postgresql+psycopg://liftfit_app:liftfit_app@127.0.0.1:1/booking"


CHECKOUT = pb.CheckoutRequest(
    org_id=new_id(),
    user="u",
    idempotency_key="unreachable-1",
    slot_id=new_id(),
    party_size=1,
    payment_mode="card",
)


# A read in an ORM session, a read on a pooled connection without one, and the card
# checkout's transaction on the driver: each asks the pool for a connection its own way.
@pytest.mark.parametrize(
    ("method", "request_"),
    [
        ("ListSpaces", pb.ListSpacesRequest()),
        ("GetBooking", pb.GetBookingRequest(org_id=new_id(), booking_id=new_id())),
        ("Checkout", CHECKOUT),
    ],
)
async def test_an_unreachable_database_is_unavailable_not_unknown(
    start_booking: StartBooking, method: str, request_: Any
) -> None:
    booking = await start_booking(database_url=CLOSED_PORT_URL)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await getattr(booking.stub, method)(request_, timeout=30)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert reason_of(refused.value) == "unavailable"
    details = refused.value.details() or ""
    assert "127.0.0.1" not in details and "psycopg" not in details.lower()


async def test_every_connection_carries_statement_lock_and_idle_time_outs(
    booking: BookingHarness,
) -> None:
    async with booking.app.uows.sessions() as session:
        shown = {
            name: (await session.execute(text(f"SHOW {name}"))).scalar_one()
            for name in (
                "statement_timeout",
                "lock_timeout",
                "idle_in_transaction_session_timeout",
            )
        }
    assert shown == {
        "statement_timeout": "15s",
        "lock_timeout": "5s",
        "idle_in_transaction_session_timeout": "1min",
    }
