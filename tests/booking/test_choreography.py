"""The saga with the payment service, through real events on real topics."""

from __future__ import annotations

import asyncio
from typing import TypeVar

from aiokafka import AIOKafkaConsumer
from google.protobuf.message import Message
from liftfit.booking.v1 import events_pb2 as ev
from liftfit.payment.v1 import events_pb2 as pay

from servicekit import envelope
from servicekit.kafka_access import client_security
from tests.booking.harness import BookingHarness, eventually, new_id

M = TypeVar("M", bound=Message)


async def test_a_card_checkout_asks_the_payment_service_for_a_payment_on_the_topic(
    booking: BookingHarness,
) -> None:
    [slot] = await booking.space_with_slots(1)
    reply = await booking.checkout(slot.slot_id, new_id())
    consumer = AIOKafkaConsumer(
        booking.app.settings.topic("booking.events"),
        bootstrap_servers=booking.app.settings.kafka_bootstrap,
        auto_offset_reset="earliest",
        **client_security(),
    )
    await consumer.start()
    try:
        event = await asyncio.wait_for(_first(consumer, ev.PaymentRequested), 30)
    finally:
        await consumer.stop()
    assert event.booking_id == reply.booking.booking_id
    assert (event.price.amount, event.price.currency) == (45000, "CZK")
    assert event.hold_expires_at.ToDatetime() > event.hold_expires_at.ToDatetime().min


async def _first(consumer: AIOKafkaConsumer, kind: type[M]) -> M:
    """The first event of this kind on the topic (the space's SpaceCreated comes before)."""
    while True:
        record = await consumer.getone()
        event = envelope.unpack(envelope.parse(record.value or b""))
        if isinstance(event, kind):
            return event


async def test_a_payment_for_a_held_booking_confirms_it_and_books_the_slot(
    booking: BookingHarness,
) -> None:
    [slot] = await booking.space_with_slots(1)
    org = new_id()
    pending = (await booking.checkout(slot.slot_id, org)).booking
    payment_id = new_id()
    await booking.pay(pending.booking_id, payment_id)

    async def confirmed() -> bool:
        return (await booking.booking(org, pending.booking_id)).state == "confirmed"

    await eventually(confirmed)
    assert (await booking.slot(slot)).state == "booked"
    [announced] = await booking.published(ev.BookingConfirmed)
    assert (announced.booking_id, announced.payment_id) == (pending.booking_id, payment_id)
    await booking.pay(pending.booking_id, payment_id)  # a repeated notice: nothing new
    assert len(await booking.published(ev.BookingConfirmed)) == 1
    assert await booking.published(ev.PaymentWithoutBooking) == []


async def test_money_after_cancellation_never_resurrects_the_booking_and_is_refunded(
    booking: BookingHarness,
) -> None:
    [slot] = await booking.space_with_slots(1)
    org = new_id()
    pending = (await booking.checkout(slot.slot_id, org)).booking
    await booking.cancel(org, pending.booking_id)
    payment_id = new_id()
    await booking.pay(pending.booking_id, payment_id)

    async def refund_announced() -> list[ev.PaymentWithoutBooking]:
        return await booking.published(ev.PaymentWithoutBooking)

    [orphan] = await eventually(refund_announced)
    assert (orphan.payment_id, orphan.reason) == (payment_id, "booking_cancelled")
    assert (await booking.booking(org, pending.booking_id)).state == "cancelled"
    assert (await booking.slot(slot)).state == "available"


async def test_a_failed_payment_expires_the_booking_and_frees_the_slot(
    booking: BookingHarness,
) -> None:
    [slot] = await booking.space_with_slots(1)
    org = new_id()
    pending = (await booking.checkout(slot.slot_id, org)).booking
    payment_id = new_id()
    created = pay.PaymentCreated(payment_id=payment_id, booking_id=pending.booking_id)
    await booking.publish("payment.events", payment_id, created)
    failed = pay.PaymentFailed(payment_id=payment_id, booking_id=pending.booking_id, state="failed")
    await booking.publish("payment.events", payment_id, failed)

    async def expired() -> bool:
        found = await booking.booking(org, pending.booking_id)
        return found.state == "expired" and found.payment_id == payment_id

    await eventually(expired)
    assert (await booking.slot(slot)).state == "available"
    await booking.pay(pending.booking_id, payment_id)  # settles late after all
    await eventually(lambda: booking.published(ev.PaymentWithoutBooking))
    assert (await booking.booking(org, pending.booking_id)).state == "expired"
