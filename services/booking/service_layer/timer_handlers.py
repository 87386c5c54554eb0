"""Durable timers of the booking service."""

from __future__ import annotations

from servicekit.timers import DueTimer
from services.booking.domain.model import BookingState
from services.booking.service_layer.event_handlers import expire_booking
from services.booking.service_layer.unit_of_work import UnitOfWork


async def release_unpaid_hold(uow: UnitOfWork, timer: DueTimer) -> None:
    """The hold ran out: a booking still pending expires; anything else moved on already."""
    if timer.expected.get("state") != "pending":
        return
    # Look before locking: the runner holds earlier timers' locks in this transaction, so it
    # locks only bookings still pending, which no reschedule or payment is busy moving on.
    seen = await uow.bookings.find(timer.aggregate_id)
    if seen is None or seen.state is not BookingState.PENDING:
        return
    booking = await uow.bookings.lock(timer.aggregate_id)
    if booking is not None:
        await expire_booking(uow, booking)
