"""Translation between table rows and domain objects."""

from __future__ import annotations

from typing import Any

from servicekit import validation
from servicekit.contacts import Contact
from servicekit.rows import record
from services.booking.domain.model import (
    Booking,
    BookingState,
    ClosedReason,
    Money,
    PaymentMode,
    Slot,
    SlotState,
    TimeRange,
)


def is_uuid(value: str) -> bool:
    """Ids are opaque to callers; a malformed one simply names nothing.

    Only the canonical form counts: PostgreSQL refuses some that Python's parser accepts
    (`urn:uuid:...`, an underscore between digits), and an id from an event is not checked
    at the gRPC edge.
    """
    return validation.is_canonical_uuid(value)


def slot_of(row: Any) -> Slot:
    return Slot(
        slot_id=str(row.slot_id),
        space_id=str(row.space_id),
        during=TimeRange(row.starts_at, row.ends_at),
        price=Money(row.price_amount, row.currency),
        state=SlotState(row.state),
        holder=str(row.holder_booking_id) if row.holder_booking_id else None,
        closed_reason=ClosedReason(row.closed_reason) if row.closed_reason else None,
    )


def slot_values(slot: Slot) -> dict[str, Any]:
    return {
        "state": slot.state.value,
        "holder_booking_id": slot.holder,
        "closed_reason": slot.closed_reason.value if slot.closed_reason else None,
        "price_amount": slot.price.amount,
        "currency": slot.price.currency,
    }


def booking_of(row: Any) -> Booking:
    return record(
        Booking,
        row,
        booking_id=str(row.booking_id),
        slot_id=str(row.slot_id),
        space_id=str(row.space_id),
        slot_during=TimeRange(row.slot_starts_at, row.slot_ends_at),
        window=TimeRange(row.valid_from, row.valid_to),
        payment_mode=PaymentMode(row.payment_mode),
        price=Money(row.price_amount, row.currency),
        state=BookingState(row.state),
        contact=Contact(row.contact_email, row.contact_locale),
    )


def booking_values(booking: Booking) -> dict[str, Any]:
    """The columns that may change after checkout; the snapshots are written once."""
    return {
        "state": booking.state.value,
        "payment_id": booking.payment_id,
        "paid": booking.paid,
        "hold_expires_at": booking.hold_expires_at,
        "slot_id": booking.slot_id,
        "space_id": booking.space_id,
        "slot_starts_at": booking.slot_during.starts_at,
        "slot_ends_at": booking.slot_during.ends_at,
        "valid_from": booking.window.starts_at,
        "valid_to": booking.window.ends_at,
        "moves": booking.moves,
        "updated_at": booking.updated_at,
    }


def new_booking_values(booking: Booking) -> dict[str, Any]:
    return {
        **booking_values(booking),
        "booking_id": booking.booking_id,
        "org_id": booking.org_id,
        "user": booking.user,
        "party_size": booking.party_size,
        "payment_mode": booking.payment_mode.value,
        "price_amount": booking.price.amount,
        "currency": booking.price.currency,
        "terms_version": booking.terms_version,
        "trace_id": booking.trace_id,
        "created_at": booking.created_at,
        "contact_email": booking.contact.email,
        "contact_locale": booking.contact.locale,
    }
