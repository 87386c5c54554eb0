"""Slots, bookings and pass balances, with their state machines.

Every transition is conditional: it says whether it changed anything, so a repeated,
late or reordered event is a no-op instead of a second effect.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from servicekit.contacts import NO_CONTACT, Contact
from servicekit.refusals import InvalidRequest
from services.booking.domain.errors import (
    BookingNotCancellable,
    BookingNotReschedulable,
    InsufficientPassBalance,
    SlotUnavailable,
)


class SlotState(StrEnum):
    AVAILABLE = "available"
    HELD = "held"
    BOOKED = "booked"
    CLOSED = "closed"


class ClosedReason(StrEnum):
    OPERATOR = "operator"
    # A disclosed PIN may still open the door: the slot waits for the provider's revocation.
    AWAITING_REVOCATION = "awaiting_revocation"


class BookingState(StrEnum):
    PENDING = "pending"
    CONFIRMED = "confirmed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


LIVE_STATES = (BookingState.PENDING, BookingState.CONFIRMED)


class PaymentMode(StrEnum):
    CARD = "card"
    PASS = "pass"


@dataclass(frozen=True)
class Money:
    amount: int  # minor units
    currency: str  # ISO 4217

    def __post_init__(self) -> None:
        # The last guard; callers' prices are checked in full by commands.price.
        if self.amount < 0 or len(self.currency) != 3 or not self.currency.isupper():
            raise InvalidRequest("a price needs an amount of at least 0 and an ISO 4217 code")


@dataclass(frozen=True)
class TimeRange:
    """A half-open interval [starts_at, ends_at)."""

    starts_at: datetime
    ends_at: datetime

    def __post_init__(self) -> None:
        if self.starts_at.tzinfo is None or not self.starts_at < self.ends_at:
            raise InvalidRequest("a time range needs aware times and starts_at < ends_at")


@dataclass(frozen=True)
class Space:
    """A studio: its slots are sold one at a time, in its own time zone."""

    space_id: str
    name: str
    timezone: str


@dataclass
class Slot:
    slot_id: str
    space_id: str
    during: TimeRange
    price: Money
    state: SlotState = SlotState.AVAILABLE
    holder: str | None = None  # the live booking that holds or booked it
    closed_reason: ClosedReason | None = None

    def require_available(self) -> None:
        """The guard of a booking. Whether a slot may be sold at all (available and not yet
        begun) is the database's slot_refusal (SlotRepository.require_sellable), the one
        place that rule is written; a card checkout's hold is made there too (card_checkout)."""
        if self.state is not SlotState.AVAILABLE:
            raise SlotUnavailable(f"slot {self.slot_id} is {self.state}")

    def book_for(self, booking_id: str) -> None:
        self.require_available()
        self.state, self.holder = SlotState.BOOKED, booking_id

    def is_held_by(self, booking_id: str) -> bool:
        return self.state is SlotState.HELD and self.holder == booking_id

    def book_held(self, booking_id: str) -> bool:
        if not self.is_held_by(booking_id):
            return False
        self.state = SlotState.BOOKED
        return True

    def release_from(self, booking_id: str, pin_disclosed: bool) -> bool:
        """Frees the slot of a booking that left it; closed while a disclosed PIN may work."""
        if self.holder != booking_id:
            return False
        self.holder = None
        if pin_disclosed:
            self.state, self.closed_reason = SlotState.CLOSED, ClosedReason.AWAITING_REVOCATION
        else:
            self.state, self.closed_reason = SlotState.AVAILABLE, None
        return True

    def close_for_late_disclosure(self) -> bool:
        if self.state is not SlotState.AVAILABLE:
            return False
        self.state, self.closed_reason = SlotState.CLOSED, ClosedReason.AWAITING_REVOCATION
        return True

    def reopen_after_revocation(self) -> bool:
        if self.closed_reason is not ClosedReason.AWAITING_REVOCATION:
            return False
        self.state, self.closed_reason = SlotState.AVAILABLE, None
        return True

    def close_by_operator(self) -> None:
        if self.state not in (SlotState.AVAILABLE, SlotState.CLOSED):
            raise SlotUnavailable(f"slot {self.slot_id} is {self.state}; cancel its booking first")
        self.state, self.closed_reason = SlotState.CLOSED, ClosedReason.OPERATOR


@dataclass
class Booking:
    """A booking with the snapshots taken at checkout; later slot edits never reach them."""

    booking_id: str
    org_id: str
    user: str
    slot_id: str
    space_id: str
    slot_during: TimeRange
    window: TimeRange  # the access window announced to the access service
    party_size: int
    payment_mode: PaymentMode
    price: Money
    terms_version: str
    state: BookingState
    payment_id: str | None = None
    hold_expires_at: datetime | None = None
    trace_id: str = ""
    paid: bool = False  # money was taken for it by card: cancelling it means a refund
    moves: int = 0  # times rescheduled; numbers its BookingRescheduled events
    contact: Contact = NO_CONTACT  # who gets its mails, copied at checkout
    created_at: datetime | None = None  # set by the repository when stored
    updated_at: datetime | None = None

    @property
    def is_live(self) -> bool:
        return self.state in LIVE_STATES

    def is_paid_with(self, payment_id: str) -> bool:
        return self.paid and self.payment_id == payment_id

    def attach_payment(self, payment_id: str) -> bool:
        if self.payment_id or not self.is_live:
            return False
        self.payment_id = payment_id
        return True

    def confirm_if_pending(self, payment_id: str) -> bool:
        if self.state is not BookingState.PENDING:
            return False
        self.state, self.payment_id, self.paid = BookingState.CONFIRMED, payment_id, True
        return True

    def expire_if_pending(self) -> bool:
        if self.state is not BookingState.PENDING:
            return False
        self.state = BookingState.EXPIRED
        return True

    def cancel(self) -> bool:
        """Cancels a live booking; cancelling a cancelled one changes nothing."""
        if self.state is BookingState.CANCELLED:
            return False
        if self.state is BookingState.EXPIRED:
            raise BookingNotCancellable(f"booking {self.booking_id} has expired")
        self.state = BookingState.CANCELLED
        return True

    def require_movable_to(self, slot_id: str) -> None:
        if self.state is not BookingState.CONFIRMED:
            raise BookingNotReschedulable(f"booking {self.booking_id} is {self.state}")
        if slot_id == self.slot_id:
            raise SlotUnavailable(f"booking {self.booking_id} is already on slot {slot_id}")

    def move_to(self, slot: Slot) -> None:
        """Moves a confirmed booking; the price snapshot stays what the customer paid."""
        self.require_movable_to(slot.slot_id)
        self.slot_id, self.space_id = slot.slot_id, slot.space_id
        self.slot_during = self.window = slot.during
        self.moves += 1


@dataclass(frozen=True)
class CardHold:
    """A card checkout as the database is asked to decide it, in one call: the booking it
    makes if the slot can be sold (pending, the slot held for it until the hold expires),
    before the slot is read."""

    booking_id: str
    org_id: str
    user: str
    slot_id: str
    party_size: int
    contact: Contact
    terms_version: str
    trace_id: str
    decided_at: datetime
    hold_expires_at: datetime

    def booking(self, space_id: str, during: TimeRange, price: Money) -> Booking:
        """The booking the hold made, with its snapshots of the slot it held."""
        booking = Booking(
            booking_id=self.booking_id,
            org_id=self.org_id,
            user=self.user,
            slot_id=self.slot_id,
            space_id=space_id,
            slot_during=during,
            window=during,
            party_size=self.party_size,
            payment_mode=PaymentMode.CARD,
            price=price,
            terms_version=self.terms_version,
            state=BookingState.PENDING,
            hold_expires_at=self.hold_expires_at,
            trace_id=self.trace_id,
            contact=self.contact,
        )
        booking.created_at = booking.updated_at = self.decided_at
        return booking


@dataclass(frozen=True)
class LedgerEntry:
    org_id: str
    delta: int
    reason: str
    reference: str  # unique per organisation: the same credit or debit never applies twice


@dataclass(frozen=True)
class PassBalance:
    org_id: str
    balance: int = 0

    def redeem_one(self, booking_id: str) -> tuple[PassBalance, LedgerEntry]:
        if self.balance < 1:
            raise InsufficientPassBalance(f"organisation {self.org_id} has no pass entry left")
        entry = LedgerEntry(self.org_id, -1, "redeemed", f"booking:{booking_id}")
        return replace(self, balance=self.balance - 1), entry

    def credit(self, entries: int, reason: str, reference: str) -> tuple[PassBalance, LedgerEntry]:
        if entries < 1:
            raise InvalidRequest(f"a credit needs at least one entry, got {entries}")
        entry = LedgerEntry(self.org_id, entries, reason, reference)
        return replace(self, balance=self.balance + entries), entry
