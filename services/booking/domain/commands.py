"""Commands: what a caller asks the booking service to do, validated before any I/O.

Every field is checked here, once, with servicekit's validation rules: ids are canonical
UUIDs, users and names bounded printable text, keys 1-128 characters of A-Z a-z 0-9 . _ : -,
prices positive ISO 4217 money, slots at most a day long within the calendar range.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from itertools import pairwise

from servicekit import validation
from servicekit.commands import IdempotentCommand
from servicekit.contacts import NO_CONTACT, Contact
from servicekit.idempotency import fingerprint
from servicekit.refusals import InvalidRequest, invalid_fields_refused
from services.booking.domain.model import Money, PaymentMode, TimeRange

MAX_PARTY_SIZE = 4
LONGEST_SLOT = timedelta(hours=24)
MAX_SLOTS_PER_REQUEST = 2000


def identifier(field: str, value: str) -> str:
    """An id a caller names: a canonical UUID, or InvalidRequest."""
    with invalid_fields_refused():
        return validation.canonical_uuid(field, value)


def price(amount: int, currency: str) -> Money:
    """A price a caller sets: positive minor units up to MAX_AMOUNT, an ISO 4217 currency."""
    with invalid_fields_refused():
        return Money(
            validation.amount("price.amount", amount),
            validation.currency("price.currency", currency),
        )


@dataclass(frozen=True)
class Checkout(IdempotentCommand):
    slot_id: str
    party_size: int
    payment_mode: PaymentMode
    # Not in the fingerprint: where the mails go does not make it another checkout.
    contact: Contact = NO_CONTACT

    @classmethod
    def of(
        cls,
        org_id: str,
        user: str,
        key: str,
        slot_id: str,
        party_size: int,
        payment_mode: str,
        contact: Contact = NO_CONTACT,
    ) -> Checkout:
        with invalid_fields_refused():
            validation.one_of("payment_mode", payment_mode, PaymentMode.__members__.values())
        return cls(org_id, user, key, slot_id, party_size, PaymentMode(payment_mode), contact)

    def __post_init__(self) -> None:
        super().__post_init__()
        with invalid_fields_refused():
            validation.canonical_uuid("slot_id", self.slot_id)
            validation.integer("party_size", self.party_size, 1, MAX_PARTY_SIZE)

    def fingerprint(self) -> bytes:
        return fingerprint(
            slot_id=self.slot_id,
            org_id=self.org_id,
            user=self.user,
            party_size=self.party_size,
            payment_mode=self.payment_mode.value,
        )


@dataclass(frozen=True)
class CancelBooking(IdempotentCommand):
    booking_id: str

    def __post_init__(self) -> None:
        super().__post_init__()
        identifier("booking_id", self.booking_id)

    def fingerprint(self) -> bytes:
        return fingerprint(booking_id=self.booking_id, org_id=self.org_id, user=self.user)


@dataclass(frozen=True)
class RescheduleBooking(IdempotentCommand):
    booking_id: str
    new_slot_id: str

    def __post_init__(self) -> None:
        super().__post_init__()
        identifier("booking_id", self.booking_id)
        identifier("new_slot_id", self.new_slot_id)

    def fingerprint(self) -> bytes:
        return fingerprint(
            booking_id=self.booking_id,
            new_slot_id=self.new_slot_id,
            org_id=self.org_id,
            user=self.user,
        )


@dataclass(frozen=True)
class CreateSpace:
    name: str
    timezone: str

    def __post_init__(self) -> None:
        with invalid_fields_refused():
            validation.text("name", self.name)
            validation.time_zone("timezone", self.timezone)


@dataclass(frozen=True)
class NewSlot:
    """A slot an operator offers: at most LONGEST_SLOT long, within the calendar range."""

    during: TimeRange
    price: Money

    def __post_init__(self) -> None:
        with invalid_fields_refused():
            validation.calendar_time("starts_at", self.during.starts_at)
            validation.calendar_time("ends_at", self.during.ends_at)
            validation.time_range(
                "slot", self.during.starts_at, self.during.ends_at, longest=LONGEST_SLOT
            )
        price(self.price.amount, self.price.currency)


def slots_apart(new_slots: Sequence[NewSlot]) -> Sequence[NewSlot]:
    """New slots none of which overlaps another ([starts_at, ends_at): touching is apart).
    Overlapping a slot the space has already is the state's refusal (SlotsOverlap)."""
    ordered = sorted(new_slots, key=lambda slot: slot.during.starts_at)
    for earlier, later in pairwise(ordered):
        if later.during.starts_at < earlier.during.ends_at:
            raise InvalidRequest("new slots overlap each other", "slots")
    return new_slots


def slot_count(count: int) -> int:
    with invalid_fields_refused():
        return validation.integer("slots", count, 1, MAX_SLOTS_PER_REQUEST)
