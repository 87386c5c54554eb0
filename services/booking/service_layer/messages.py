"""The booking events of the contract (protos/liftfit/booking/v1/events.proto), built from
domain objects."""

from __future__ import annotations

from liftfit.booking.v1 import events_pb2 as ev

from servicekit import contacts, protobuf
from servicekit.protobuf import timestamp
from services.booking.domain.model import Booking, CardHold, Money, Space, TimeRange


def money(price: Money) -> ev.Money:
    return protobuf.money(ev.Money, price)


def window(during: TimeRange) -> ev.AccessWindow:
    return ev.AccessWindow(
        valid_from=timestamp(during.starts_at), valid_to=timestamp(during.ends_at)
    )


def _whose(booking: Booking) -> dict[str, str]:
    """Which booking, of which organisation and customer: what most events start with."""
    return {"booking_id": booking.booking_id, "org_id": booking.org_id, "user": booking.user}


def contact(booking: Booking) -> ev.Contact:
    return contacts.message(ev.Contact, booking.contact)


# Its price: the slot's, which the database adds as it writes the row (card_checkout).
PAYMENT_REQUESTED_PRICE = "price"


def payment_requested(hold: CardHold) -> ev.PaymentRequested:
    """PaymentRequested, all but its price (PAYMENT_REQUESTED_PRICE)."""
    return ev.PaymentRequested(
        booking_id=hold.booking_id,
        org_id=hold.org_id,
        user=hold.user,
        slot_id=hold.slot_id,
        hold_expires_at=timestamp(hold.hold_expires_at),
        contact=contacts.message(ev.Contact, hold.contact),
    )


def space_created(space: Space) -> ev.SpaceCreated:
    return ev.SpaceCreated(space_id=space.space_id, name=space.name, timezone=space.timezone)


def booking_confirmed(booking: Booking) -> ev.BookingConfirmed:
    return ev.BookingConfirmed(
        **_whose(booking),
        slot_id=booking.slot_id,
        window=window(booking.window),
        payment_mode=booking.payment_mode.value,
        payment_id=booking.payment_id or "",
        space_id=booking.space_id,
        contact=contact(booking),
        price=money(booking.price),
    )


def booking_expired(booking: Booking) -> ev.BookingExpired:
    return ev.BookingExpired(
        booking_id=booking.booking_id,
        payment_id=booking.payment_id or "",
        slot_id=booking.slot_id,
    )


def booking_cancelled(booking: Booking, refund_due: bool) -> ev.BookingCancelled:
    return ev.BookingCancelled(
        booking_id=booking.booking_id,
        slot_id=booking.slot_id,
        payment_mode=booking.payment_mode.value,
        payment_id=booking.payment_id or "",
        refund_due=refund_due,
        window=window(booking.window),
        contact=contact(booking),
        space_id=booking.space_id,
        org_id=booking.org_id,
    )


def booking_rescheduled(
    booking: Booking, old_slot_id: str, old: TimeRange
) -> ev.BookingRescheduled:
    return ev.BookingRescheduled(
        **_whose(booking),
        old_slot_id=old_slot_id,
        old_window=window(old),
        new_slot_id=booking.slot_id,
        new_window=window(booking.window),
        new_space_id=booking.space_id,
        move=booking.moves,
        contact=contact(booking),
    )


def payment_without_booking(
    booking_id: str, payment_id: str, reason: str
) -> ev.PaymentWithoutBooking:
    return ev.PaymentWithoutBooking(booking_id=booking_id, payment_id=payment_id, reason=reason)


def pass_entries_credited(org_id: str, order_id: str, entries: int) -> ev.PassEntriesCredited:
    return ev.PassEntriesCredited(org_id=org_id, order_id=order_id, entries=entries)
