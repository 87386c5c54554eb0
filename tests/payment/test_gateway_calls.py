"""Acceptance c, e: provider calls after the commit, with stable keys; refunds of late money."""

from __future__ import annotations

import asyncio

from liftfit.booking.v1 import events_pb2 as booking
from liftfit.payment.v1 import events_pb2

from services.payment.service_layer import jobs
from tests.payment.harness import Harness, eventually


async def test_a_create_answered_with_a_timeout_is_retried_with_the_same_provider_key(
    harness: Harness,
) -> None:
    # The gateway stores the payment, then hangs past the client's 1 s timeout.
    await harness.faults(timeout_next_creates=1, hang_seconds=3)

    booking_id = await harness.request_payment()
    payment = await harness.payment_when(booking_id, lambda p: bool(p.checkout_url))

    remotes = await harness.gateway_payments(reference=payment.payment_id)
    assert len(remotes) == 1
    assert remotes[0]["id"] == payment.provider_payment_id
    assert remotes[0]["idempotency_key"] == f"payment-{payment.payment_id}-attempt-1"
    # Proof that the first call really timed out and a second one was made.
    assert await harness.timers_of(jobs.CREATE_AT_GATEWAY, payment.payment_id) >= 2
    assert (await harness.gateway.get("/_sandbox/faults")).json()["timeout_next_creates"] == 0


async def test_a_payment_that_settles_after_the_hold_expired_is_refunded(harness: Harness) -> None:
    payment = await harness.opened_payment()
    await harness.faults(reorder_notifications=True)  # we do not hear of the settlement
    await harness.settle(payment.provider_payment_id)

    expired = booking.BookingExpired(booking_id=payment.booking_id, payment_id=payment.payment_id)
    await harness.publish(expired, payment.booking_id)

    refunded = await harness.payment_in(payment.booking_id, "refunded")
    remote = await harness.gateway_payment(payment.provider_payment_id)
    assert remote["state"] == "refunded" and remote["refunded_amount"] == 45000
    assert refunded.amount.amount == 45000
    await harness.events.published(events_pb2.PaymentFailed, payment.booking_id)
    await asyncio.sleep(1.0)  # room for a wrong second event to show
    states = [e.state for e in harness.events.of(events_pb2.PaymentFailed, payment.booking_id)]
    assert states == ["cancelled"]  # the booking hears "cancelled", never "succeeded"
    assert harness.events.of(events_pb2.PaymentSucceeded, payment.booking_id) == []


async def test_a_pending_payment_of_an_expired_hold_is_cancelled_at_the_gateway(
    harness: Harness,
) -> None:
    payment = await harness.opened_payment()

    expired = booking.BookingExpired(booking_id=payment.booking_id, payment_id=payment.payment_id)
    await harness.publish(expired, payment.booking_id)

    async def cancelled_at_gateway() -> bool:
        remote = await harness.gateway_payment(payment.provider_payment_id)
        return bool(remote["state"] == "cancelled")

    await eventually(cancelled_at_gateway)
    assert (await harness.payment(payment.booking_id)).state == "cancelled"  # type: ignore[union-attr]


async def test_a_paid_booking_that_is_cancelled_is_refunded_once(harness: Harness) -> None:
    payment = await harness.opened_payment()
    await harness.settle(payment.provider_payment_id)
    await harness.payment_in(payment.booking_id, "paid")
    await harness.faults(timeout_next_refunds=1, hang_seconds=3)  # the refund reply is lost

    cancelled = booking.BookingCancelled(
        booking_id=payment.booking_id, payment_id=payment.payment_id, refund_due=True
    )
    await harness.publish(cancelled, payment.booking_id)
    await harness.publish(cancelled, payment.booking_id)  # redelivered under a new event id

    await harness.payment_in(payment.booking_id, "refunded")
    remote = await harness.gateway_payment(payment.provider_payment_id)
    assert remote["refunded_amount"] == 45000  # the retry reused refund-<payment id>
    [refunded] = await harness.events.published(events_pb2.PaymentRefunded, payment.booking_id)
    await asyncio.sleep(1.0)  # room for a second request or refund to show
    assert len(harness.events.of(events_pb2.RefundRequested, payment.booking_id)) == 1
    assert len(harness.events.of(events_pb2.PaymentRefunded, payment.booking_id)) == 1
    assert refunded.state == "refunded"


async def test_money_without_a_booking_is_refunded(harness: Harness) -> None:
    payment = await harness.opened_payment()
    await harness.settle(payment.provider_payment_id)
    await harness.payment_in(payment.booking_id, "paid")

    orphan = booking.PaymentWithoutBooking(
        booking_id=payment.booking_id, payment_id=payment.payment_id, reason="expired"
    )
    await harness.publish(orphan, payment.booking_id)

    await harness.payment_in(payment.booking_id, "refunded")


async def test_a_refund_the_gateway_never_confirms_ends_refund_failed_with_an_incident(
    harness: Harness,
) -> None:
    payment = await harness.opened_payment()
    await harness.settle(payment.provider_payment_id)
    await harness.payment_in(payment.booking_id, "paid")
    await harness.faults(fail_next_calls=100)  # every provider call answers 503

    orphan = booking.PaymentWithoutBooking(booking_id=payment.booking_id, reason="cancelled")
    await harness.publish(orphan, payment.booking_id)

    await harness.payment_in(payment.booking_id, "refund_failed")
    [incident] = await harness.incidents(payment.payment_id)
    assert incident.kind == "refund_failed"
    [failed] = await harness.events.published(events_pb2.PaymentRefunded, payment.booking_id)
    assert failed.state == "refund_failed"
