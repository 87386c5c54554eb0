"""Unpaid holds expire by a durable timer (invariant 6)."""

from __future__ import annotations

import asyncio

from liftfit.booking.v1 import events_pb2 as ev

from tests.booking.conftest import StartBooking
from tests.booking.harness import eventually, new_id


async def test_an_unpaid_hold_expires_and_tells_the_payment_service(
    start_booking: StartBooking,
) -> None:
    booking = await start_booking(hold_seconds=1)
    [slot] = await booking.space_with_slots(1)
    org = new_id()
    pending = (await booking.checkout(slot.slot_id, org)).booking

    async def expired() -> bool:
        return (await booking.booking(org, pending.booking_id)).state == "expired"

    await eventually(expired, timeout_s=10)
    assert (await booking.slot(slot)).state == "available"
    [announced] = await booking.published(ev.BookingExpired)
    assert announced.booking_id == pending.booking_id


async def test_a_hold_that_fell_due_while_the_service_was_down_expires_after_restart(
    start_booking: StartBooking,
) -> None:
    first = await start_booking(hold_seconds=1)
    [slot] = await first.space_with_slots(1)
    org = new_id()
    pending = (await first.checkout(slot.slot_id, org)).booking
    await first.stop()  # before the timer is due
    await asyncio.sleep(1.5)
    again = await start_booking(hold_seconds=1)

    async def expired() -> bool:
        return (await again.booking(org, pending.booking_id)).state == "expired"

    await eventually(expired, timeout_s=10)
    assert (await again.slot(slot)).state == "available"


async def test_a_paid_booking_is_not_expired_by_its_old_timer(start_booking: StartBooking) -> None:
    booking = await start_booking(hold_seconds=2)
    [slot] = await booking.space_with_slots(1)
    org = new_id()
    pending = (await booking.checkout(slot.slot_id, org)).booking
    await booking.pay(pending.booking_id, new_id())

    async def confirmed() -> bool:
        return (await booking.booking(org, pending.booking_id)).state == "confirmed"

    await eventually(confirmed)
    await asyncio.sleep(2.5)  # the timer fires and finds the booking no longer pending
    assert (await booking.booking(org, pending.booking_id)).state == "confirmed"
    assert await booking.published(ev.BookingExpired) == []
