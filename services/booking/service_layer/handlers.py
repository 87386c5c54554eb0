"""Customer commands: checkout, cancel and reschedule, each one transaction.

Checkout follows the seed's transaction contract: lock the attempt, replay only the same
request, lock the slot, require it available, create the booking with its snapshots. A
card checkout, the hot path, is decided by the database in one call (CardCheckouts); a
pass checkout, which debits the pass ledger, runs here.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from servicekit import tracing
from servicekit.idempotency import Claim
from servicekit.refusals import IdempotencyConflict
from services.booking.adapters.card_checkouts import OPERATION as CHECKOUT
from services.booking.domain.commands import CancelBooking, Checkout, RescheduleBooking
from services.booking.domain.model import (
    Booking,
    BookingState,
    CardHold,
    PassBalance,
    PaymentMode,
    Slot,
)
from services.booking.service_layer import messages
from services.booking.service_layer.slot_release import release_slot
from services.booking.service_layer.unit_of_work import UnitOfWork


@dataclass(frozen=True)
class BookingOutcome:
    booking: Booking
    replayed: bool = False  # an earlier request under the same key produced it


async def checkout(uow: UnitOfWork, command: Checkout) -> BookingOutcome:
    if command.payment_mode is PaymentMode.CARD:
        return await _hold_for_card(uow, command)
    return await _redeem_pass(uow, command)


async def _hold_for_card(uow: UnitOfWork, command: Checkout) -> BookingOutcome:
    """Decided by the database in one call (CardCheckouts), by the same rules as a pass
    checkout below: the key claimed or its earlier request replayed, the slot sold only
    if it exists and the database's slot_refusal finds nothing against it; then the
    booking, pending, holds it until the hold expires, with PaymentRequested and the
    hold's release timer."""
    fingerprint = command.fingerprint()
    now = datetime.now(UTC)
    hold = CardHold(
        booking_id=str(uuid.uuid4()),
        org_id=command.org_id,
        user=command.user,
        slot_id=command.slot_id,
        party_size=command.party_size,
        contact=command.contact,
        terms_version=uow.policy.terms_version,
        trace_id=tracing.current_trace_id(),
        decided_at=now,
        hold_expires_at=now + timedelta(seconds=uow.policy.hold_seconds),
    )
    decided = await uow.card_checkouts.decide(
        hold,
        command.idempotency_key,
        fingerprint,
        messages.payment_requested(hold),
        messages.PAYMENT_REQUESTED_PRICE,
        uow.hold_release(hold.booking_id),
    )
    if isinstance(decided, Claim):
        return await _replay(uow, command.org_id, decided, fingerprint)
    return BookingOutcome(decided)


async def _redeem_pass(uow: UnitOfWork, command: Checkout) -> BookingOutcome:
    fingerprint = command.fingerprint()
    # The attempt and then the slot are locked in one round trip, the transaction's first
    # (its BEGIN may travel with it); a replay has locked the slot too, which changes
    # nothing, and spares every first attempt a round trip.
    async with uow.reads_together():
        claim = await uow.idempotency.send_claim(
            command.org_id, CHECKOUT, command.idempotency_key, fingerprint, str(uuid.uuid4())
        )
        locked = await uow.slots.send_lock(command.slot_id)
    attempt = await claim.result()
    if not attempt.is_new:
        return await _replay(uow, command.org_id, attempt, fingerprint)
    slot = locked.slot()
    await uow.slots.require_sellable(slot, datetime.now(UTC))
    booking = _open_booking(uow, command, slot, attempt.resource_id)
    balance = await uow.passes.lock_existing(booking.org_id) or PassBalance(booking.org_id)
    debited, entry = balance.redeem_one(booking.booking_id)
    slot.book_for(booking.booking_id)
    await uow.passes.apply(debited, entry)
    async with uow.last_writes():
        await uow.bookings.add(booking)
        await uow.slots.save(slot)
        await uow.publish(booking.booking_id, messages.booking_confirmed(booking))
    return BookingOutcome(booking)


def _open_booking(uow: UnitOfWork, command: Checkout, slot: Slot, booking_id: str) -> Booking:
    return Booking(
        booking_id=booking_id,
        org_id=command.org_id,
        user=command.user,
        slot_id=slot.slot_id,
        space_id=slot.space_id,
        slot_during=slot.during,
        window=slot.during,
        party_size=command.party_size,
        payment_mode=command.payment_mode,
        price=slot.price,
        terms_version=uow.policy.terms_version,
        state=BookingState.CONFIRMED,
        trace_id=tracing.current_trace_id(),
        contact=command.contact,
    )


async def cancel_booking(uow: UnitOfWork, command: CancelBooking) -> BookingOutcome:
    await uow.bookings.get_in_org(command.org_id, command.booking_id)
    fingerprint = command.fingerprint()
    attempt = await _claim(
        uow, command.org_id, "cancel", command.idempotency_key, fingerprint, command.booking_id
    )
    if not attempt.is_new:
        return await _replay(uow, command.org_id, attempt, fingerprint)
    booking = await uow.bookings.lock_in_org(command.org_id, command.booking_id)
    if not booking.cancel():
        return BookingOutcome(booking)  # cancelling a cancelled booking changes nothing
    await release_slot(uow, booking.booking_id, await uow.slots.lock(booking.slot_id))
    if booking.payment_mode is PaymentMode.PASS:
        await _return_pass_entry(uow, booking)
    await uow.bookings.save(booking)
    await uow.cancel_hold_release(booking.booking_id)
    await uow.publish(booking.booking_id, messages.booking_cancelled(booking, booking.paid))
    return BookingOutcome(booking)


async def _return_pass_entry(uow: UnitOfWork, booking: Booking) -> None:
    balance = await uow.passes.lock(booking.org_id)
    credited, entry = balance.credit(1, "booking_cancelled", f"cancel:{booking.booking_id}")
    await uow.passes.apply(credited, entry)


async def reschedule_booking(uow: UnitOfWork, command: RescheduleBooking) -> BookingOutcome:
    await uow.bookings.get_in_org(command.org_id, command.booking_id)
    fingerprint = command.fingerprint()
    attempt = await _claim(
        uow, command.org_id, "reschedule", command.idempotency_key, fingerprint, command.booking_id
    )
    if not attempt.is_new:
        return await _replay(uow, command.org_id, attempt, fingerprint)
    booking = await uow.bookings.lock_in_org(command.org_id, command.booking_id)
    booking.require_movable_to(command.new_slot_id)
    old_slot_id, old_window = booking.slot_id, booking.window
    slots = await uow.slots.lock_in_order([old_slot_id, command.new_slot_id])
    new_slot = slots[command.new_slot_id]
    await uow.slots.require_sellable(new_slot, datetime.now(UTC))
    new_slot.book_for(booking.booking_id)
    booking.move_to(new_slot)
    await release_slot(uow, booking.booking_id, slots[old_slot_id])
    await uow.slots.save(new_slot)
    await uow.bookings.save(booking)
    event = messages.booking_rescheduled(booking, old_slot_id, old_window)
    await uow.publish(booking.booking_id, event)
    return BookingOutcome(booking)


async def _claim(
    uow: UnitOfWork, org_id: str, operation: str, key: str, fingerprint: bytes, booking_id: str
) -> Claim:
    return await uow.idempotency.claim(org_id, operation, key, fingerprint, booking_id)


async def _replay(
    uow: UnitOfWork, org_id: str, attempt: Claim, fingerprint: bytes
) -> BookingOutcome:
    if not attempt.matches(fingerprint):
        raise IdempotencyConflict("this Idempotency-Key was used for a different request")
    booking = await uow.bookings.get_in_org(org_id, attempt.resource_id)
    return BookingOutcome(booking, replayed=True)
