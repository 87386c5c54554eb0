"""Acceptance a, b, d: notifications are verified hints; the gateway's truth decides."""

from __future__ import annotations

import asyncio
import time
from functools import partial

import grpc
from liftfit.booking.v1 import events_pb2 as booking
from liftfit.payment.v1 import events_pb2, payment_pb2

from services.payment.domain.signature import sign
from tests.payment.harness import SECRETS, Harness, eventually, notification_body, trailing

EVENTS_SETTLE_S = 1.0  # time for a wrongly published second event to reach the broker


async def _paid_silently(harness: Harness) -> payment_pb2.Payment:
    """A payment paid at the gateway whose notification was dropped: only we may tell."""
    payment = await harness.opened_payment()
    await harness.faults(drop_notifications=True)
    await harness.settle(payment.provider_payment_id)
    await harness.faults(drop_notifications=False)
    return payment


async def test_forged_stale_or_altered_notifications_are_rejected_and_change_nothing(
    harness: Harness,
) -> None:
    payment = await _paid_silently(harness)
    body = notification_body(payment.provider_payment_id, "paid", payment.payment_id)
    now = int(time.time())

    forged = await harness.notify(body, sign(body, ("whsec_guess",), now))
    stale = await harness.notify(body, sign(body, SECRETS, now - 301))
    altered = await harness.notify(body.replace(b"paid", b"PAID"), sign(body, SECRETS, now))
    unsigned = await harness.notify(body, "")

    for response in (forged, stale, altered, unsigned):
        assert response.status_code == 400
        assert response.json()["code"] == "invalid_signature"
    assert (await harness.payment(payment.booking_id)).state == "pending"  # type: ignore[union-attr]


async def test_a_forged_notification_through_grpc_is_invalid_signature(harness: Harness) -> None:
    payment = await _paid_silently(harness)
    body = notification_body(payment.provider_payment_id, "paid", payment.payment_id)
    request = payment_pb2.HandleNotificationRequest(
        raw_body=body, signature_header=sign(body, ("whsec_guess",), int(time.time()))
    )

    try:
        await harness.stub.HandleNotification(request)
        raise AssertionError("a forged notification was accepted")
    except grpc.aio.AioRpcError as error:
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert trailing(error)["reason"] == "invalid_signature"
    assert (await harness.payment(payment.booking_id)).state == "pending"  # type: ignore[union-attr]


async def test_a_notification_signed_with_either_rotated_secret_is_accepted(
    harness: Harness,
) -> None:
    old = await _paid_silently(harness)
    new = await _paid_silently(harness)

    for payment, secret in ((old, "whsec_old"), (new, "whsec_new")):
        body = notification_body(payment.provider_payment_id, "paid", payment.payment_id)
        response = await harness.notify_signed(body, (secret,))
        assert response.status_code == 200
        assert (await harness.payment(payment.booking_id)).state == "paid"  # type: ignore[union-attr]


async def test_the_body_is_a_hint_a_paid_claim_for_an_unpaid_payment_changes_nothing(
    harness: Harness,
) -> None:
    payment = await harness.opened_payment()
    body = notification_body(payment.provider_payment_id, "paid", payment.payment_id)

    response = await harness.notify_signed(body)

    assert response.status_code == 200
    assert (await harness.payment(payment.booking_id)).state == "pending"  # type: ignore[union-attr]


async def test_ten_duplicated_notifications_confirm_once_with_one_event(harness: Harness) -> None:
    payment = await harness.opened_payment()
    await harness.faults(duplicate_notifications=9)

    await harness.settle(payment.provider_payment_id)

    async def all_ten_delivered() -> bool:
        sent = [
            d
            for d in await harness.deliveries(payment.provider_payment_id)
            if d["status"] == "sent"
        ]
        return len(sent) == 10

    await eventually(all_ten_delivered)
    await harness.payment_in(payment.booking_id, "paid")
    await harness.events.published(events_pb2.PaymentSucceeded, payment.booking_id)
    await asyncio.sleep(EVENTS_SETTLE_S)
    assert len(harness.events.of(events_pb2.PaymentSucceeded, payment.booking_id)) == 1
    assert harness.events.of(events_pb2.RefundRequested, payment.booking_id) == []


async def test_reordered_notifications_after_a_cancellation_refund_without_confirming(
    harness: Harness,
) -> None:
    payment = await harness.opened_payment()
    await harness.faults(reorder_notifications=True)  # the "paid" notification is held back
    await harness.settle(payment.provider_payment_id)
    cancelled = booking.BookingCancelled(
        booking_id=payment.booking_id, payment_id=payment.payment_id, payment_mode="card"
    )

    await harness.publish(cancelled, payment.booking_id)
    await harness.payment_in(payment.booking_id, "refunded")
    await harness.gateway.post("/_sandbox/notifications/flush")  # "refunded" first, then "paid"

    async def delivered() -> bool:
        done = [
            d
            for d in await harness.deliveries(payment.provider_payment_id)
            if d["status"] == "sent"
        ]
        return len(done) == 2

    await eventually(delivered)
    await harness.events.published(events_pb2.PaymentRefunded, payment.booking_id)
    await asyncio.sleep(EVENTS_SETTLE_S)
    assert (await harness.payment(payment.booking_id)).state == "refunded"  # type: ignore[union-attr]
    assert harness.events.of(events_pb2.PaymentSucceeded, payment.booking_id) == []
    assert len(harness.events.of(events_pb2.RefundRequested, payment.booking_id)) == 1
    assert len(harness.events.of(events_pb2.PaymentRefunded, payment.booking_id)) == 1


async def test_a_late_paid_notification_never_moves_a_refunded_payment_back(
    harness: Harness,
) -> None:
    payment = await harness.opened_payment()
    await harness.settle(payment.provider_payment_id)
    await harness.payment_in(payment.booking_id, "paid")
    [paid_delivery] = await harness.deliveries(payment.provider_payment_id)
    cancelled = booking.BookingCancelled(
        booking_id=payment.booking_id, payment_id=payment.payment_id, refund_due=True
    )
    await harness.publish(cancelled, payment.booking_id)
    await harness.payment_in(payment.booking_id, "refunded")

    late = paid_delivery["event"]
    body = notification_body(late["data"]["payment_id"], "paid", late["data"]["reference"])
    for _ in range(3):
        assert (await harness.notify_signed(body)).status_code == 200

    await harness.events.published(events_pb2.RefundRequested, payment.booking_id)
    await asyncio.sleep(EVENTS_SETTLE_S)
    assert (await harness.payment(payment.booking_id)).state == "refunded"  # type: ignore[union-attr]
    assert len(harness.events.of(events_pb2.PaymentSucceeded, payment.booking_id)) == 1
    assert len(harness.events.of(events_pb2.RefundRequested, payment.booking_id)) == 1


async def test_an_amount_changed_at_the_gateway_opens_an_incident_and_no_transition(
    harness: Harness,
) -> None:
    for change in ({"amount": 1}, {"currency": "EUR"}):
        payment = await harness.opened_payment(amount=45000, currency="CZK")
        url = f"/_sandbox/payments/{payment.provider_payment_id}/tamper"
        (await harness.gateway.post(url, json=change)).raise_for_status()

        await harness.settle(payment.provider_payment_id)

        subject = payment.payment_id
        [incident] = await eventually(partial(harness.incidents, subject))
        assert incident.kind == "amount_mismatch"
        assert (await harness.payment(payment.booking_id)).state == "pending"  # type: ignore[union-attr]
    await asyncio.sleep(EVENTS_SETTLE_S)
    assert not [e for _, e in harness.events.seen if isinstance(e, events_pb2.PaymentSucceeded)]
