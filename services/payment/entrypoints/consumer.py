"""The inbox's handlers for booking.events: event type -> reaction."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from google.protobuf.message import Message
from liftfit.booking.v1 import events_pb2 as booking
from liftfit.events.v1.envelope_pb2 import EventEnvelope
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.inbox import EventHandler
from services.payment.service_layer import event_handlers
from services.payment.service_layer.dependencies import PaymentDeps
from services.payment.service_layer.unit_of_work import PaymentTransaction

Reaction = Callable[[PaymentTransaction, Any], Awaitable[None]]

REACTIONS: dict[type[Message], Reaction] = {
    booking.PaymentRequested: event_handlers.open_booking_payment,
    booking.BookingExpired: event_handlers.booking_expired,
    booking.BookingCancelled: event_handlers.booking_cancelled,
    booking.PaymentWithoutBooking: event_handlers.payment_without_booking,
}


def booking_event_handlers(deps: PaymentDeps) -> dict[str, EventHandler]:
    """Keyed by full message name, as the envelope names its payload; others are ignored."""

    def bound(reaction: Reaction) -> EventHandler:
        async def handle(session: AsyncSession, _: EventEnvelope, event: Message) -> None:
            await reaction(deps.uow.within(session), event)

        return handle

    return {kind.DESCRIPTOR.full_name: bound(reaction) for kind, reaction in REACTIONS.items()}
