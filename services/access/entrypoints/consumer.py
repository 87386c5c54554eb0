"""What the access service does with each booking event it consumes, for the inbox.

An event's fields are checked before anything is planned: ids must be canonical UUIDs and
a window must be a real one. An event that fails is the record's fault, not a passing
one: the handler raises and the inbox parks it with the reason, for an operator.
"""

from __future__ import annotations

from datetime import UTC
from typing import TypedDict

from google.protobuf.timestamp_pb2 import Timestamp
from liftfit.booking.v1 import events_pb2 as booking

from servicekit import validation
from servicekit.inbox import EventHandler
from servicekit.unit_of_work import bind_events
from services.access.domain.model import Window
from services.access.service_layer import grants
from services.access.service_layer.grants import BookingAccess
from services.access.service_layer.unit_of_work import UnitOfWork, UnitOfWorkFactory


class UnusableEvent(ValueError):
    """A booking event whose fields name no booking, slot or window."""


def _id(field: str, value: str) -> str:
    if not validation.is_canonical_uuid(value):
        raise UnusableEvent(f"{field} is not a canonical UUID")
    return value


def _window(field: str, window: booking.AccessWindow) -> Window:
    stamps: list[Timestamp] = [window.valid_from, window.valid_to]
    try:
        start, end = (validation.moment(field, stamp) for stamp in stamps)
        return Window(start.astimezone(UTC), end.astimezone(UTC))
    except (validation.InvalidField, ValueError):
        raise UnusableEvent(f"{field} is not a window within the calendar") from None


class _Who(TypedDict):
    booking_id: str
    org_id: str
    user: str


def _who(event: booking.BookingConfirmed | booking.BookingRescheduled) -> _Who:
    try:
        user = validation.text("user", event.user)
    except validation.InvalidField:
        raise UnusableEvent("user is not printable text") from None
    return _Who(
        booking_id=_id("booking_id", event.booking_id),
        org_id=_id("org_id", event.org_id),
        user=user,
    )


async def _confirmed(uow: UnitOfWork, event: booking.BookingConfirmed) -> None:
    access = BookingAccess(
        **_who(event),
        slot_id=_id("slot_id", event.slot_id),
        space_id=event.space_id,
        window=_window("window", event.window),
    )
    await grants.plan_access(uow, access)


async def _cancelled(uow: UnitOfWork, event: booking.BookingCancelled) -> None:
    await grants.end_access(uow, _id("booking_id", event.booking_id))


async def _rescheduled(uow: UnitOfWork, event: booking.BookingRescheduled) -> None:
    access = BookingAccess(
        **_who(event),
        slot_id=_id("new_slot_id", event.new_slot_id),
        space_id=event.new_space_id,
        window=_window("new_window", event.new_window),
        move=_move(event.move),
    )
    await grants.move_access(uow, access)


def _move(number: int) -> int:
    if number < 0:
        raise UnusableEvent("move is negative: moves are numbered from 1 (0: not numbered)")
    return number


def event_handlers(uows: UnitOfWorkFactory) -> dict[str, EventHandler]:
    """The inbox's map from event type to reaction; other booking events are ignored."""
    return bind_events(
        uows,
        {
            booking.BookingConfirmed: _confirmed,
            booking.BookingCancelled: _cancelled,
            booking.BookingRescheduled: _rescheduled,
        },
    )
