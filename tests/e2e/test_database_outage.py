"""Payments made while the database is down confirm their bookings soon after it returns.

Both services run in this process on the local PostgreSQL, which the test stops for a
while; the customers pay on the real sandbox gateway meanwhile. The payment service
refuses each notification with 503, the gateway retries for about two seconds and gives
up; the payment service has remembered the notifications and applies them again once the
database answers, without waiting for its reconciliation sweep (an hour here).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import grpc
import httpx
from liftfit.booking.v1 import booking_pb2 as bpb
from liftfit.booking.v1 import booking_pb2_grpc
from sqlalchemy import Table, func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from services.booking.adapters import orm as booking_orm
from tests.e2e.conftest import Platform
from tests.e2e.test_late_money import _payment_in
from tests.e2e.test_walking_skeleton import _card_checkout
from tests.support import tls
from tests.support.infrastructure import start_postgres, stop_postgres
from tests.support.sandboxes import SandboxAuth
from tests.support.waiting import eventually

CUSTOMERS = 4
OUTAGE_S = 10.0
SETTLED_WITHIN_S = 60.0


async def test_payments_made_while_the_database_is_down_confirm_their_bookings_once_it_is_back(
    platform: Platform,
) -> None:
    bookings = [await _card_checkout(platform) for _ in range(CUSTOMERS)]
    payments = [await _payment_in(platform, b.booking_id, {"pending"}) for b in bookings]
    paid_at_gateway = [p.provider_payment_id for p in payments]

    async with httpx.AsyncClient(
        base_url=platform.gateway_url, auth=SandboxAuth(), timeout=10
    ) as gateway:
        await asyncio.to_thread(stop_postgres)
        stopped = time.monotonic()
        try:
            for provider_id in paid_at_gateway:
                settle = f"/_sandbox/payments/{provider_id}/settle"
                (await gateway.post(settle, json={"outcome": "succeed"})).raise_for_status()
            # Every notification was refused while the database was down, and given up on.
            await eventually(lambda: _all_given_up(gateway, paid_at_gateway), within=30)
            await eventually(lambda: _reached(stopped + OUTAGE_S), within=OUTAGE_S + 5)
        finally:
            await asyncio.to_thread(start_postgres)
    restarted = time.monotonic()

    await eventually(lambda: _all_confirmed(platform, bookings), within=SETTLED_WITHIN_S)
    settled_s = time.monotonic() - restarted
    assert settled_s < SETTLED_WITHIN_S
    print(f"every paid booking confirmed {settled_s:.1f} s after the database returned")
    booking_ids = [b.booking_id for b in bookings]
    payment_outbox = platform.payment.tables.eventing.outbox
    assert await _events(platform.payment.runtime.engine, payment_outbox, "PaymentSucceeded") == {
        booking_id: 1 for booking_id in booking_ids
    }
    assert await _events(
        platform.booking.runtime.engine, booking_orm.eventing.outbox, "BookingConfirmed"
    ) == {booking_id: 1 for booking_id in booking_ids}


async def _all_given_up(gateway: httpx.AsyncClient, provider_ids: list[str]) -> bool:
    deliveries = (await gateway.get("/_sandbox/notifications")).json()["data"]
    given_up = {
        d["event"]["data"]["payment_id"]
        for d in deliveries
        if d["status"] == "failed" and d["http_status"] == 503
    }
    return given_up >= set(provider_ids)


async def _reached(moment: float) -> bool:
    return time.monotonic() >= moment


async def _all_confirmed(platform: Platform, bookings: list[bpb.Booking]) -> bool:
    async with tls.channel(f"127.0.0.1:{platform.booking.grpc_port}") as channel:
        stub = booking_pb2_grpc.BookingServiceStub(channel)
        try:
            for b in bookings:
                request = bpb.GetBookingRequest(org_id=b.org_id, booking_id=b.booking_id)
                if (await stub.GetBooking(request)).state != "confirmed":
                    return False
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.UNAVAILABLE:  # the database is just back
                raise
            return False
    return True


async def _events(engine: AsyncEngine, outbox: Table, name: str) -> dict[str, int]:
    """How many events of one type each aggregate has in a service's outbox."""
    query: Any = (
        select(outbox.c.key, func.count())
        .where(outbox.c.event_type.endswith(f".{name}"))
        .group_by(outbox.c.key)
    )
    async with engine.connect() as connection:
        return {key: count for key, count in (await connection.execute(query)).all()}
