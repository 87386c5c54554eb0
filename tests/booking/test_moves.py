"""Cancellation, rescheduling and the disclosed-PIN rule (invariants 1, 4 and 17)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest
from liftfit.access.v1 import events_pb2 as access
from liftfit.booking.v1 import booking_pb2 as pb
from liftfit.booking.v1 import events_pb2 as ev
from sqlalchemy import func, select

from servicekit.grpc_server import reason_of
from services.booking.adapters import orm
from services.booking.adapters.repository import SlotRepository
from tests.booking.conftest import StartBooking
from tests.booking.harness import BookingHarness, eventually, new_id, new_key, reason_of_call


async def _confirmed_booking(booking: BookingHarness, slot: pb.Slot, org: str) -> pb.Booking:
    pending = (await booking.checkout(slot.slot_id, org)).booking
    await booking.pay(pending.booking_id, new_id())

    async def confirmed() -> pb.Booking | None:
        found = await booking.booking(org, pending.booking_id)
        return found if found.state == "confirmed" else None

    return await eventually(confirmed)


async def _slot_reaches(booking: BookingHarness, slot: pb.Slot, state: str) -> None:
    async def reached() -> bool:
        return (await booking.slot(slot)).state == state

    await eventually(reached)


async def _disclose(booking: BookingHarness, booking_id: str, slot_id: str) -> None:
    event = access.PinDisclosed(booking_id=booking_id, slot_id=slot_id, grant_id="grant-1")
    await booking.consumed(await booking.publish("access.events", booking_id, event))


async def _revoke(booking: BookingHarness, booking_id: str, slot_id: str) -> None:
    event = access.RevocationConfirmed(booking_id=booking_id, slot_id=slot_id, grant_id="grant-1")
    await booking.publish("access.events", booking_id, event)


async def test_cancelling_a_paid_booking_frees_the_slot_and_announces_a_refund(
    booking: BookingHarness,
) -> None:
    [slot] = await booking.space_with_slots(1)
    org = new_id()
    confirmed = await _confirmed_booking(booking, slot, org)
    cancelled = await booking.cancel(org, confirmed.booking_id)
    assert cancelled.booking.state == "cancelled"
    assert (await booking.slot(slot)).state == "available"
    [announced] = await booking.published(ev.BookingCancelled)
    assert announced.refund_due and announced.payment_id == confirmed.payment_id
    again = await booking.cancel(org, confirmed.booking_id)  # changes nothing
    assert again.booking.state == "cancelled"
    assert len(await booking.published(ev.BookingCancelled)) == 1


async def test_an_expired_booking_cannot_be_cancelled_and_a_pending_one_not_moved(
    start_booking: StartBooking,
) -> None:
    booking = await start_booking(hold_seconds=1)
    first, second = await booking.space_with_slots(2)
    org = new_id()
    pending = (await booking.checkout(first.slot_id, org)).booking
    moving = booking.reschedule(org, pending.booking_id, second.slot_id)
    assert await reason_of_call(moving) == "booking_not_reschedulable"
    await _slot_reaches(booking, first, "available")
    cancelling = booking.cancel(org, pending.booking_id)
    assert await reason_of_call(cancelling) == "booking_not_cancellable"
    assert await reason_of_call(booking.cancel(new_id(), pending.booking_id)) == "not_found"


async def test_a_cancelled_slot_whose_pin_was_disclosed_stays_closed_until_revoked(
    booking: BookingHarness,
) -> None:
    [slot] = await booking.space_with_slots(1)
    org = new_id()
    confirmed = await _confirmed_booking(booking, slot, org)
    await _disclose(booking, confirmed.booking_id, slot.slot_id)
    await booking.cancel(org, confirmed.booking_id)
    assert (await booking.slot(slot)).state == "closed"
    assert await reason_of_call(booking.checkout(slot.slot_id, new_id())) == "slot_unavailable"
    await _revoke(booking, confirmed.booking_id, slot.slot_id)
    await _slot_reaches(booking, slot, "available")


async def test_a_reschedule_keeps_the_price_moves_the_window_and_closes_a_disclosed_slot(
    booking: BookingHarness,
) -> None:
    old, new = await booking.space_with_slots(2)
    org = new_id()
    confirmed = await _confirmed_booking(booking, old, org)
    await _disclose(booking, confirmed.booking_id, old.slot_id)
    price = pb.SetSlotPriceRequest(slot_id=new.slot_id, price=ev.Money(amount=1, currency="CZK"))
    await booking.stub.SetSlotPrice(price)
    moved = (await booking.reschedule(org, confirmed.booking_id, new.slot_id)).booking
    assert moved.slot.slot_id == new.slot_id and moved.price.amount == 45000
    assert moved.window.valid_from == new.starts_at
    assert (await booking.slot(old)).state == "closed"
    assert (await booking.slot(new)).state == "booked"
    [announced] = await booking.published(ev.BookingRescheduled)
    assert (announced.old_slot_id, announced.new_slot_id) == (old.slot_id, new.slot_id)
    assert announced.new_window.valid_from == new.starts_at
    await _revoke(booking, confirmed.booking_id, old.slot_id)
    await _slot_reaches(booking, old, "available")


async def test_opposite_reschedules_running_together_never_deadlock_nor_double_book(
    booking: BookingHarness,
) -> None:
    slots = await booking.space_with_slots(6)
    org = new_id()
    confirmed = await asyncio.gather(
        *(_confirmed_booking(booking, slot, org) for slot in slots[:3])
    )
    held_by = {b.booking_id: b.slot.slot_id for b in confirmed}
    # Every booking tries to move onto every other slot at once, in both directions.
    moves = [
        (b, slot.slot_id)
        for b, slot in itertools.product(confirmed, slots)
        if slot.slot_id != held_by[b.booking_id]
    ] * 2

    async def move(b: pb.Booking, target: str) -> str:
        try:
            await asyncio.wait_for(booking.reschedule(org, b.booking_id, target), 20)
        except grpc.aio.AioRpcError as error:
            return reason_of(error)
        return "moved"

    outcomes = await asyncio.gather(*(move(b, target) for b, target in moves))
    assert set(outcomes) <= {"moved", "slot_unavailable"} and "moved" in outcomes
    await _assert_one_live_booking_per_booked_slot(booking, len(confirmed))


async def _assert_one_live_booking_per_booked_slot(booking: BookingHarness, live: int) -> None:
    b, s = orm.bookings.c, orm.slots.c
    async with booking.app.uows.sessions() as session:
        per_slot = await session.execute(
            select(b.slot_id, func.count())
            .where(b.state.in_(["pending", "confirmed"]))
            .group_by(b.slot_id)
        )
        counts = {row[0]: row[1] for row in per_slot}
        booked = await session.execute(select(s.slot_id).where(s.state == "booked"))
        holders = {row[0] for row in booked}
    assert sum(counts.values()) == live and set(counts.values()) == {1}
    assert set(counts) == holders


async def test_a_reschedule_replayed_under_its_key_returns_the_moved_booking(
    booking: BookingHarness,
) -> None:
    old, new, other = await booking.space_with_slots(3)
    org, key = new_id(), new_key()
    confirmed = await _confirmed_booking(booking, old, org)
    first = await booking.reschedule(org, confirmed.booking_id, new.slot_id, key=key)
    again = await booking.reschedule(org, confirmed.booking_id, new.slot_id, key=key)
    assert again.replayed and again.booking.slot.slot_id == first.booking.slot.slot_id
    elsewhere = booking.reschedule(org, confirmed.booking_id, other.slot_id, key=key)
    assert await reason_of_call(elsewhere) == "idempotency_conflict"


async def test_two_bookings_swapping_slots_at_once_both_get_slot_unavailable_not_a_deadlock(
    booking: BookingHarness,
) -> None:
    slots = await booking.space_with_slots(8)
    org = new_id()
    pairs = [
        await asyncio.gather(*(_confirmed_booking(booking, s, org) for s in slots[i : i + 2]))
        for i in range(0, 8, 2)
    ]

    async def move(b: pb.Booking, target: str) -> str:
        try:
            await booking.reschedule(org, b.booking_id, target)
        except grpc.aio.AioRpcError as error:
            return reason_of(error) or error.code().name
        return "moved"

    for _ in range(5):
        outcomes = await asyncio.gather(
            *(move(a, b.slot.slot_id) for a, b in pairs),
            *(move(b, a.slot.slot_id) for a, b in pairs),
        )
        assert set(outcomes) == {"slot_unavailable"}, outcomes


async def test_opposite_moves_each_holding_one_slot_wait_in_slot_order_instead_of_deadlocking(
    booking: BookingHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Makes the dangerous interleaving certain instead of lucky: after its first slot lock,
    # each move waits (up to a second) until the other move has also locked a slot. With
    # slots locked in one global order the second move blocks on the first lock and never
    # gets there; in request order both hold one slot and wait for the other's: a deadlock.
    first, second = await booking.space_with_slots(2)
    org = new_id()
    a = await _confirmed_booking(booking, first, org)
    b = await _confirmed_booking(booking, second, org)
    holding_one = 0
    both_hold_one = asyncio.Event()
    lock_one = SlotRepository._one

    async def lock_then_wait_for_the_other(self: SlotRepository, query: Any, slot_id: str) -> Any:
        nonlocal holding_one
        slot = await lock_one(self, query, slot_id)
        if not getattr(self, "waited", False):
            self.waited = True  # type: ignore[attr-defined]
            holding_one += 1
            if holding_one == 2:
                both_hold_one.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(both_hold_one.wait(), 1.0)
        return slot

    monkeypatch.setattr(SlotRepository, "_one", lock_then_wait_for_the_other)

    async def move(moving: pb.Booking, target: str) -> str:
        try:
            await booking.reschedule(org, moving.booking_id, target)
        except grpc.aio.AioRpcError as error:
            return reason_of(error) or error.code().name
        return "moved"

    outcomes = await asyncio.gather(move(a, second.slot_id), move(b, first.slot_id))
    assert list(outcomes) == ["slot_unavailable", "slot_unavailable"]
    await _assert_one_live_booking_per_booked_slot(booking, 2)


async def test_a_booking_is_not_moved_into_a_slot_that_has_started(
    booking: BookingHarness,
) -> None:
    [future] = await booking.space_with_slots(1)
    started = datetime.now(UTC) - timedelta(minutes=1)
    [begun] = await booking.space_with_slots(1, start_at=started)
    org = new_id()
    confirmed = await _confirmed_booking(booking, future, org)

    refused = booking.reschedule(org, confirmed.booking_id, begun.slot_id)

    assert await reason_of_call(refused) == "slot_unavailable"
    found = await booking.booking(org, confirmed.booking_id)
    assert (found.state, found.slot.slot_id) == ("confirmed", future.slot_id)
    assert (await booking.slot(begun)).state == "available"
    assert (await booking.slot(future)).state == "booked"


async def test_each_move_of_a_booking_is_numbered_so_a_consumer_can_order_them(
    booking: BookingHarness,
) -> None:
    first, second, third = await booking.space_with_slots(3)
    org = new_id()
    confirmed = await _confirmed_booking(booking, first, org)
    await booking.reschedule(org, confirmed.booking_id, second.slot_id)
    await booking.reschedule(org, confirmed.booking_id, third.slot_id)
    refused = booking.reschedule(org, confirmed.booking_id, third.slot_id)
    assert await reason_of_call(refused) == "slot_unavailable"  # it is there: no move, no number
    moves = await booking.published(ev.BookingRescheduled)
    assert [(m.move, m.new_slot_id) for m in moves] == [(1, second.slot_id), (2, third.slot_id)]
