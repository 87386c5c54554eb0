"""Money that arrives after the booking was cancelled is refunded; the booking stays cancelled.

Both services run for real against the sandbox gateway; the notification of the payment is
lost, so the payment service learns of the money only when it tries to cancel the payment."""

from __future__ import annotations

import asyncio

import httpx
from liftfit.booking.v1 import booking_pb2 as bpb
from liftfit.booking.v1 import booking_pb2_grpc
from liftfit.payment.v1 import payment_pb2 as ppb
from liftfit.payment.v1 import payment_pb2_grpc

from tests.e2e.conftest import Platform
from tests.e2e.test_walking_skeleton import _card_checkout
from tests.support import tls
from tests.support.sandboxes import SandboxAuth


async def _payment_in(platform: Platform, booking_id: str, states: set[str]) -> ppb.Payment:
    async with tls.channel(f"127.0.0.1:{platform.payment.grpc_port}") as channel:
        payments = payment_pb2_grpc.PaymentServiceStub(channel)
        payment = ppb.Payment()
        for _ in range(300):
            try:
                payment = await payments.GetPaymentForBooking(
                    ppb.GetPaymentForBookingRequest(booking_id=booking_id)
                )
                if payment.state in states and payment.checkout_url:
                    return payment
            except Exception:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError(f"payment never reached {states}; last seen {payment.state!r}")


async def test_a_payment_settled_after_cancellation_is_refunded_and_never_resurrects_the_booking(
    platform: Platform,
) -> None:
    booking = await _card_checkout(platform)
    payment = await _payment_in(platform, booking.booking_id, {"pending"})
    async with httpx.AsyncClient(auth=SandboxAuth()) as browser:
        # The money settles at the gateway but the notification is lost: locally the
        # payment is still pending when the customer cancels.
        await browser.post(
            f"{platform.gateway_url}/_sandbox/faults", json={"drop_notifications": True}
        )
        paid = await browser.post(payment.checkout_url, data={"outcome": "succeed"})
        assert paid.status_code in (200, 303)
    async with tls.channel(f"127.0.0.1:{platform.booking.grpc_port}") as channel:
        stub = booking_pb2_grpc.BookingServiceStub(channel)
        cancelled = await stub.CancelBooking(
            bpb.CancelBookingRequest(
                org_id=booking.org_id,
                user=booking.user,
                idempotency_key="cancel-1",
                booking_id=booking.booking_id,
            )
        )
        assert cancelled.booking.state == "cancelled"
        final = await _payment_in(platform, booking.booking_id, {"refunded"})
        again = await stub.GetBooking(
            bpb.GetBookingRequest(org_id=booking.org_id, booking_id=booking.booking_id)
        )
    assert again.state == "cancelled"
    assert final.state == "refunded"
