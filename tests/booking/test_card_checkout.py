"""A card checkout decided by the database in one call (card_checkout): a slot is sold by
one rule (slot_refusal) whichever way it is paid for, and the PaymentRequested it writes,
priced by the database, is the event the contract describes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import grpc
import pytest
from liftfit.booking.v1 import events_pb2 as ev
from sqlalchemy import select, text, update

from servicekit import envelope
from servicekit.grpc_server import reason_of
from services.booking.adapters import orm
from services.booking.adapters.card_checkouts import _MONEY_KEYS
from services.booking.domain.model import SlotState
from tests.booking.harness import BookingHarness, new_id

AMOUNTS = [0, 1, 127, 128, 300, 16_383, 16_384, 45_000, 2**31, 2**53, 2**63 - 1]


@pytest.mark.parametrize("currency", ["CZK", "EUR"])
async def test_the_database_writes_money_as_protobuf_does(
    booking: BookingHarness, currency: str
) -> None:
    async with booking.app.uows.sessions() as session:
        for amount in AMOUNTS:
            written = await session.scalar(
                text("SELECT protobuf_money(:keys, :amount, :currency)"),
                {"keys": _MONEY_KEYS, "amount": amount, "currency": currency},
            )
            expected = ev.Money(amount=amount, currency=currency)
            assert ev.Money.FromString(written) == expected
            if amount:  # proto3 leaves a zero out; the database writes it, which reads the same
                assert written == expected.SerializeToString()


@pytest.mark.parametrize("amount", [1, 127, 128, 16_384, 45_000, 100_000_000])
async def test_payment_requested_is_the_whole_event_with_the_slots_price(
    booking: BookingHarness, amount: int
) -> None:
    [slot] = await booking.space_with_slots(1, amount=amount)
    org = new_id()
    booked = (await booking.checkout(slot.slot_id, org, user="ann")).booking
    expected = ev.PaymentRequested(
        booking_id=booked.booking_id,
        org_id=org,
        user="ann",
        price=ev.Money(amount=amount, currency="CZK"),
        slot_id=slot.slot_id,
        hold_expires_at=booked.hold_expires_at,
        contact=booked.contact,
    )
    async with booking.app.uows.sessions() as session:
        outbox = orm.eventing.outbox
        kind = outbox.c.event_type == expected.DESCRIPTOR.full_name
        row = (await session.execute(select(outbox).where(kind))).one()
    wrapped = envelope.parse(row.payload)
    assert envelope.unpack(wrapped) == expected
    assert (wrapped.event_id, wrapped.aggregate_id) == (str(row.effect_id), booked.booking_id)
    assert (wrapped.event_type, row.event_type) == (expected.DESCRIPTOR.full_name,) * 2
    assert wrapped.producer == "booking"
    assert dict(wrapped.trace_context) == row.headers


@pytest.mark.parametrize("mode", ["card", "pass"])
@pytest.mark.parametrize("state", list(SlotState))
@pytest.mark.parametrize("started", [False, True])
async def test_a_slot_is_sold_only_while_available_and_before_it_begins(
    booking: BookingHarness, mode: str, state: SlotState, started: bool
) -> None:
    """One rule (the database's slot_refusal) for both checkouts: a card checkout asks it
    inside card_checkout, a pass checkout through SlotRepository.require_sellable."""
    starts_at = datetime.now(UTC) + (timedelta(minutes=-1) if started else timedelta(days=3))
    [slot] = await booking.space_with_slots(1, start_at=starts_at)
    holder = str(uuid.uuid4()) if state in (SlotState.HELD, SlotState.BOOKED) else None
    closed = "operator" if state is SlotState.CLOSED else None
    async with booking.app.uows.sessions() as session, session.begin():
        await session.execute(
            update(orm.slots)
            .where(orm.slots.c.slot_id == slot.slot_id)
            .values(state=state.value, holder_booking_id=holder, closed_reason=closed)
        )
    sellable = state is SlotState.AVAILABLE and not started
    try:
        await booking.checkout(slot.slot_id, new_id(), payment_mode=mode)
        reason = "sold"
    except grpc.aio.AioRpcError as refused:
        reason = reason_of(refused)
    # An organisation with no pass entries is refused for that only once the slot passed.
    sold = "sold" if mode == "card" else "insufficient_pass_balance"
    assert reason == (sold if sellable else "slot_unavailable")
