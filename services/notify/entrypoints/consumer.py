"""What the notify service does with each event it consumes, for the inbox.

An event's fields are checked before anything is planned: ids must be canonical UUIDs,
times real ones, a contact a valid address and locale. An event that fails is the
record's fault: the handler raises and the inbox parks it with the reason. An event
without a contact (an older producer, a caller that gave none) makes no mail.
"""

from __future__ import annotations

from datetime import UTC

from google.protobuf.timestamp_pb2 import Timestamp
from liftfit.access.v1 import events_pb2 as access
from liftfit.booking.v1 import events_pb2 as booking
from liftfit.payment.v1 import events_pb2 as payment

from servicekit import validation
from servicekit.contacts import Contact, ContactLike
from servicekit.inbox import EventHandler
from servicekit.unit_of_work import bind_events
from services.notify.adapters.repository import BookingContact
from services.notify.service_layer import planning
from services.notify.service_layer.planning import Price, Slot
from services.notify.service_layer.unit_of_work import UnitOfWork, UnitOfWorkFactory


class UnusableEvent(ValueError):
    """An event whose fields name no booking, payment, time or recipient."""


def _id(field: str, value: str) -> str:
    if not validation.is_canonical_uuid(value):
        raise UnusableEvent(f"{field} is not a canonical UUID")
    return value


def _optional_id(field: str, value: str) -> str:
    return _id(field, value) if value else ""


def _contact(value: ContactLike) -> Contact:
    try:
        return Contact.of(value)
    except validation.InvalidField as bad:
        raise UnusableEvent(f"{bad.field} {bad.problem}") from None


def _price(field: str, value: booking.Money | payment.Money) -> Price:
    try:
        return Price(
            validation.amount(f"{field}.amount", value.amount),
            validation.currency(f"{field}.currency", value.currency),
        )
    except validation.InvalidField as bad:
        raise UnusableEvent(f"{bad.field} {bad.problem}") from None


def _slot(field: str, window: booking.AccessWindow, space_id: str) -> Slot:
    stamps: list[Timestamp] = [window.valid_from, window.valid_to]
    try:
        start, end = (validation.moment(field, stamp) for stamp in stamps)
    except (validation.InvalidField, ValueError):
        raise UnusableEvent(f"{field} is not a window within the calendar") from None
    return Slot(start.astimezone(UTC), end.astimezone(UTC), space_id)


def _space(field: str, value: str) -> str:
    return _optional_id(field, value)


def _who(booking_id: str, org_id: str, contact: ContactLike, space_id: str) -> BookingContact:
    return BookingContact(
        _id("booking_id", booking_id), _optional_id("org_id", org_id), _contact(contact), space_id
    )


async def _confirmed(uow: UnitOfWork, event: booking.BookingConfirmed) -> None:
    space = _space("space_id", event.space_id)
    who = _who(event.booking_id, event.org_id, event.contact, space)
    slot = _slot("window", event.window, space)
    if not event.HasField("price"):  # an older producer's event: no price to tell
        await planning.contact_known(uow, who)
        return
    await planning.booking_confirmed(uow, who, slot, _price("price", event.price))


async def _rescheduled(uow: UnitOfWork, event: booking.BookingRescheduled) -> None:
    space = _space("new_space_id", event.new_space_id)
    await planning.booking_moved(uow, _who(event.booking_id, event.org_id, event.contact, space))


async def _cancelled(uow: UnitOfWork, event: booking.BookingCancelled) -> None:
    space = _space("space_id", event.space_id)
    who = _who(event.booking_id, event.org_id, event.contact, space)
    if not who.contact.email:
        return  # no address (an older producer, a caller that gave none): no mail
    await planning.booking_cancelled(
        uow, who, _slot("window", event.window, space), event.refund_due
    )


async def _space_created(uow: UnitOfWork, event: booking.SpaceCreated) -> None:
    try:
        name = validation.text("name", event.name)
        zone = validation.time_zone("timezone", event.timezone)
    except validation.InvalidField as bad:
        raise UnusableEvent(f"{bad.field} {bad.problem}") from None
    await uow.studios.remember(_id("space_id", event.space_id), name, zone)


async def _activated(uow: UnitOfWork, event: access.AccessActivated) -> None:
    grant_id = event.grant_id
    try:
        validation.text("grant_id", grant_id, max_length=64)
    except validation.InvalidField:
        raise UnusableEvent("grant_id is not printable text of at most 64 characters") from None
    await planning.access_activated(uow, grant_id, _id("booking_id", event.booking_id))


async def _paid(uow: UnitOfWork, event: payment.PaymentSucceeded) -> None:
    if not event.order_id:
        return  # a booking's payment: the booking's confirmation is its mail
    order_id = _id("order_id", event.order_id)
    await planning.order_paid(
        uow, order_id, _contact(event.contact), _price("amount", event.amount)
    )


async def _refunded(uow: UnitOfWork, event: payment.PaymentRefunded) -> None:
    if event.state != "refunded":
        return  # refund_failed is the payment service's incident, not a customer's mail
    payment_id = _id("payment_id", event.payment_id)
    booking_id = _optional_id("booking_id", event.booking_id)
    contact = _contact(event.contact)
    if not event.HasField("amount"):
        return  # an older producer's event: no amount to tell
    await planning.refund_completed(
        uow, payment_id, booking_id, contact, _price("amount", event.amount)
    )


def event_handlers(uows: UnitOfWorkFactory) -> dict[str, EventHandler]:
    """The inbox's map from event type to reaction; other events are ignored."""
    return bind_events(
        uows,
        {
            booking.BookingConfirmed: _confirmed,
            booking.BookingRescheduled: _rescheduled,
            booking.BookingCancelled: _cancelled,
            booking.SpaceCreated: _space_created,
            access.AccessActivated: _activated,
            payment.PaymentSucceeded: _paid,
            payment.PaymentRefunded: _refunded,
        },
    )
