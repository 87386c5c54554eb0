"""Checkout under contention and under replays (invariants 1, 2 and 3)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import grpc
from liftfit.booking.v1 import booking_pb2 as pb
from liftfit.booking.v1 import events_pb2 as ev
from sqlalchemy import func, select

from servicekit.grpc_server import reason_of
from services.booking.adapters import orm
from tests.booking.harness import BookingHarness, new_id, new_key, reason_of_call
from tests.support.stored import columns_holding


async def _live_bookings_on(booking: BookingHarness, slot_id: str) -> int:
    t = orm.bookings.c
    async with booking.app.uows.sessions() as session:
        query = select(func.count()).where(
            t.slot_id == slot_id, t.state.in_(["pending", "confirmed"])
        )
        return int(await session.scalar(query) or 0)


async def test_fifty_customers_racing_for_one_slot_get_one_booking(
    booking: BookingHarness,
) -> None:
    [slot] = await booking.space_with_slots(1)
    org = new_id()

    async def attempt(i: int) -> str:
        try:
            reply = await booking.checkout(slot.slot_id, org, user=f"user-{i}")
        except grpc.aio.AioRpcError as error:
            return reason_of(error)
        return reply.booking.booking_id

    outcomes = await asyncio.gather(*(attempt(i) for i in range(50)))
    assert outcomes.count("slot_unavailable") == 49
    assert await _live_bookings_on(booking, slot.slot_id) == 1
    assert (await booking.slot(slot)).state == "held"


async def test_fifty_concurrent_replays_of_one_checkout_all_get_the_same_booking(
    booking: BookingHarness,
) -> None:
    [slot] = await booking.space_with_slots(1)
    org, key = new_id(), new_key()
    replies = await asyncio.gather(
        *(booking.checkout(slot.slot_id, org, key=key) for _ in range(50))
    )
    assert len({reply.booking.booking_id for reply in replies}) == 1
    assert sum(not reply.replayed for reply in replies) == 1
    assert await _live_bookings_on(booking, slot.slot_id) == 1


async def test_a_key_reused_for_a_different_request_is_a_conflict_and_changes_nothing(
    booking: BookingHarness,
) -> None:
    slot, other_slot = await booking.space_with_slots(2)
    org, key = new_id(), new_key()
    original = await booking.checkout(slot.slot_id, org, key=key, party_size=2)
    changed_requests: list[dict[str, str | int]] = [
        {"slot_id": other_slot.slot_id},
        {"party_size": 3},
        {"payment_mode": "pass"},
        {"user": "mallory"},
    ]
    for change in changed_requests:
        request = {"slot_id": slot.slot_id, "org_id": org, "key": key, **change}
        reason = await reason_of_call(booking.checkout(**request))  # type: ignore[arg-type]
        assert reason == "idempotency_conflict"
    assert (await booking.slot(other_slot)).state == "available"
    again = await booking.checkout(slot.slot_id, org, key=key, party_size=2)
    assert again.replayed and again.booking.booking_id == original.booking.booking_id
    bookings = await booking.stub.ListBookings(pb.ListBookingsRequest(org_id=org))
    assert [b.booking_id for b in bookings.bookings] == [original.booking.booking_id]


async def test_the_same_key_in_another_organisation_is_an_unrelated_checkout(
    booking: BookingHarness,
) -> None:
    slot, other_slot = await booking.space_with_slots(2)
    key = new_key()
    first = await booking.checkout(slot.slot_id, new_id(), key=key)
    second = await booking.checkout(other_slot.slot_id, new_id(), key=key)
    assert not second.replayed
    assert second.booking.booking_id != first.booking.booking_id


async def test_the_idempotency_key_is_stored_only_as_a_keyed_hash(booking: BookingHarness) -> None:
    [slot] = await booking.space_with_slots(1)
    key = new_key()
    await booking.checkout(slot.slot_id, new_id(), key=key)
    async with booking.app.uows.sessions() as session:
        stored = (await session.execute(select(orm.eventing.idempotency_keys.c.key_hash))).scalars()
        hashes = [bytes(value) for value in stored]
        assert await columns_holding(session, key) == []
    assert len(hashes) == 1 and key.encode() not in hashes[0] and len(hashes[0]) == 32


async def test_an_unknown_slot_is_not_found_and_a_malformed_id_is_a_validation_error(
    booking: BookingHarness,
) -> None:
    assert await reason_of_call(booking.checkout(new_id(), new_id())) == "not_found"
    assert await reason_of_call(booking.checkout("not-a-uuid", new_id())) == "validation_error"


async def test_changing_a_slots_price_after_checkout_leaves_the_booking_price_alone(
    booking: BookingHarness,
) -> None:
    [slot] = await booking.space_with_slots(1, amount=45000)
    org = new_id()
    booked = (await booking.checkout(slot.slot_id, org)).booking
    new_price = ev.Money(amount=99000, currency="EUR")
    await booking.stub.SetSlotPrice(pb.SetSlotPriceRequest(slot_id=slot.slot_id, price=new_price))
    assert (await booking.slot(slot)).price.amount == 99000
    found = await booking.booking(org, booked.booking_id)
    assert (found.price.amount, found.price.currency) == (45000, "CZK")
    assert found.terms_version == "2026-11"
    [requested] = await booking.published(ev.PaymentRequested)
    assert (requested.price.amount, requested.price.currency) == (45000, "CZK")


async def test_a_slot_that_has_started_is_not_sold(booking: BookingHarness) -> None:
    started = datetime.now(UTC) - timedelta(minutes=1)
    [slot] = await booking.space_with_slots(1, start_at=started)
    assert await reason_of_call(booking.checkout(slot.slot_id, new_id())) == "slot_unavailable"
    assert (
        await reason_of_call(booking.checkout(slot.slot_id, new_id(), payment_mode="pass"))
        == "slot_unavailable"
    )
    assert (await booking.slot(slot)).state == "available"
    assert await _live_bookings_on(booking, slot.slot_id) == 0
