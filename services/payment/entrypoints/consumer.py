"""The inbox's handlers for booking.events: event type -> reaction; others are ignored."""

from __future__ import annotations

from liftfit.booking.v1 import events_pb2 as booking

from servicekit.inbox import EventHandler
from servicekit.unit_of_work import bind_events
from services.payment.service_layer import event_handlers
from services.payment.service_layer.dependencies import PaymentDeps


def booking_event_handlers(deps: PaymentDeps) -> dict[str, EventHandler]:
    return bind_events(
        deps.uows,
        {
            booking.PaymentRequested: event_handlers.open_booking_payment,
            booking.BookingExpired: event_handlers.booking_expired,
            booking.BookingCancelled: event_handlers.booking_cancelled,
            booking.PaymentWithoutBooking: event_handlers.payment_without_booking,
        },
    )
