"""The path the foundation test relies on: PaymentRequested -> a payment row -> the gateway."""

from __future__ import annotations

from typing import Any

from liftfit.payment.v1 import events_pb2

from tests.payment.harness import Harness, eventually


async def test_payment_requested_writes_the_payment_and_creates_it_at_the_gateway(
    harness: Harness,
) -> None:
    booking_id = await harness.request_payment(amount=45000, currency="CZK")

    payment = await harness.payment_when(booking_id, lambda p: bool(p.checkout_url))

    assert payment.state == "pending"
    assert (payment.amount.amount, payment.amount.currency) == (45000, "CZK")
    [remote] = await harness.gateway_payments(reference=payment.payment_id)
    assert remote["id"] == payment.provider_payment_id
    assert remote["checkout_url"] == payment.checkout_url
    assert remote["idempotency_key"] == f"payment-{payment.payment_id}-attempt-1"
    created = await eventually(
        lambda: _async(harness.events.of(events_pb2.PaymentCreated, booking_id))
    )
    assert [e.checkout_url for e in created] == [payment.checkout_url]


async def test_a_redelivered_payment_request_opens_no_second_payment(harness: Harness) -> None:
    booking_id = await harness.request_payment()
    first = await harness.payment_when(booking_id, lambda p: bool(p.checkout_url))

    # The same request again under a new event id: the inbox cannot tell, the table can.
    await harness.request_payment(amount=1, booking_id=booking_id)
    later = await harness.request_payment()  # once this one is in, ours was consumed too
    await harness.payment_when(later, lambda p: bool(p.checkout_url))
    again = await harness.payment(booking_id)

    assert again is not None and again.payment_id == first.payment_id
    assert again.amount.amount == first.amount.amount
    assert len(await harness.gateway_payments(reference=first.payment_id)) == 1


async def _async(value: list[Any]) -> list[Any]:
    return value
