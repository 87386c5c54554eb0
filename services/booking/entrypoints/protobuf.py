"""Domain objects to and from the messages of protos/liftfit/booking/v1/booking.proto."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from google.protobuf.timestamp_pb2 import Timestamp
from liftfit.booking.v1 import booking_pb2 as pb
from liftfit.booking.v1 import events_pb2 as ev

from servicekit import contacts, validation
from servicekit.protobuf import timestamp
from servicekit.refusals import InvalidRequest, invalid_fields_refused
from services.booking.adapters.passes import LedgerLine
from services.booking.domain.commands import LONGEST_SLOT, NewSlot, identifier, price, slot_count
from services.booking.domain.model import Booking, Money, Slot, Space, TimeRange
from services.booking.service_layer.handlers import BookingOutcome
from services.booking.service_layer.messages import money, window


@dataclass(frozen=True)
class SlotQuery:
    space_id: str
    since: datetime | None
    until: datetime | None


def moment(field: str, stamp: Timestamp) -> datetime:
    """A caller's time, checked for range before protobuf converts it (which may raise)."""
    with invalid_fields_refused():
        return validation.moment(field, stamp)


def slot_query(message: pb.ListSlotsRequest) -> SlotQuery:
    space_id = identifier("space_id", message.space_id)
    since = moment("from", getattr(message, "from")) if message.HasField("from") else None
    until = moment("to", message.to) if message.HasField("to") else None
    if since is not None and until is not None and until < since:
        raise InvalidRequest("must not be before from", "to")
    return SlotQuery(space_id, since, until)


def price_of(value: ev.Money) -> Money:
    return price(value.amount, value.currency)


def new_slots_of(message: pb.CreateSlotsRequest) -> tuple[str, list[NewSlot]]:
    space_id = identifier("space_id", message.space_id)
    slot_count(len(message.slots))
    return space_id, [new_slot_of(slot) for slot in message.slots]


def new_slot_of(message: pb.NewSlot) -> NewSlot:
    if not (message.HasField("starts_at") and message.HasField("ends_at")):
        raise InvalidRequest("a slot needs starts_at and ends_at", "slots")
    starts_at, ends_at = moment("starts_at", message.starts_at), moment("ends_at", message.ends_at)
    with invalid_fields_refused():
        validation.time_range("slot", starts_at, ends_at, longest=LONGEST_SLOT)
    return NewSlot(TimeRange(starts_at, ends_at), price_of(message.price))


def space_message(space: Space) -> pb.Space:
    return pb.Space(space_id=space.space_id, name=space.name, timezone=space.timezone)


def slot_message(slot: Slot) -> pb.Slot:
    return pb.Slot(
        slot_id=slot.slot_id,
        space_id=slot.space_id,
        starts_at=timestamp(slot.during.starts_at),
        ends_at=timestamp(slot.during.ends_at),
        state=slot.state.value,
        price=money(slot.price),
    )


def booking_message(booking: Booking) -> pb.Booking:
    return pb.Booking(
        booking_id=booking.booking_id,
        org_id=booking.org_id,
        user=booking.user,
        state=booking.state.value,
        slot=pb.Slot(
            slot_id=booking.slot_id,
            space_id=booking.space_id,
            starts_at=timestamp(booking.slot_during.starts_at),
            ends_at=timestamp(booking.slot_during.ends_at),
        ),
        party_size=booking.party_size,
        payment_mode=booking.payment_mode.value,
        price=money(booking.price),
        payment_id=booking.payment_id or "",
        window=window(booking.window),
        terms_version=booking.terms_version,
        trace_id=booking.trace_id,
        contact=contacts.message(ev.Contact, booking.contact),
        created_at=timestamp(booking.created_at),
        updated_at=timestamp(booking.updated_at),
        hold_expires_at=timestamp(booking.hold_expires_at),
    )


def reply(outcome: BookingOutcome) -> pb.BookingReply:
    return pb.BookingReply(booking=booking_message(outcome.booking), replayed=outcome.replayed)


def pass_balance_message(org_id: str, balance: int, ledger: list[LedgerLine]) -> pb.PassBalance:
    entries = [
        pb.PassLedgerEntry(delta=line.delta, reason=line.reason, at=timestamp(line.at))
        for line in ledger
    ]
    return pb.PassBalance(org_id=org_id, balance=balance, entries=entries)
