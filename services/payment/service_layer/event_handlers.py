"""Reactions to the booking service's events, run by the inbox inside its transaction."""

from __future__ import annotations

import uuid
from datetime import UTC

from liftfit.booking.v1 import events_pb2 as booking

from servicekit.contacts import Contact
from services.payment.domain import payment_states as states
from services.payment.domain.money import Money
from services.payment.domain.payment import Payment
from services.payment.service_layer import jobs
from services.payment.service_layer.transitions import release_payment
from services.payment.service_layer.unit_of_work import UnitOfWork


async def open_booking_payment(uow: UnitOfWork, event: booking.PaymentRequested) -> None:
    """Writes the payment with its amount snapshot; the gateway is called by a job later."""
    payment = Payment(
        payment_id=uuid.uuid4(),
        state=states.PENDING,
        amount=Money(event.price.amount, event.price.currency),
        org_id=event.org_id,
        booking_id=event.booking_id,
        contact=Contact.of(event.contact),
    )
    hold = (
        event.hold_expires_at.ToDatetime(tzinfo=UTC) if event.HasField("hold_expires_at") else None
    )
    if await uow.payments.add(payment, hold):
        await jobs.schedule_creation(uow, payment.payment_id, payment.attempt)


async def release_for_booking(uow: UnitOfWork, booking_id: str) -> None:
    """The hold expired, the booking was cancelled, or money arrived without a booking."""
    payment = await uow.payments.for_booking(booking_id, lock=True)
    if payment is not None:
        await release_payment(uow, payment)


async def booking_expired(uow: UnitOfWork, event: booking.BookingExpired) -> None:
    await release_for_booking(uow, event.booking_id)


async def booking_cancelled(uow: UnitOfWork, event: booking.BookingCancelled) -> None:
    # The local state decides, not refund_due: a paid payment is refunded, a pending one
    # cancelled, whatever the booking service believed when it cancelled.
    await release_for_booking(uow, event.booking_id)


async def payment_without_booking(uow: UnitOfWork, event: booking.PaymentWithoutBooking) -> None:
    await release_for_booking(uow, event.booking_id)
