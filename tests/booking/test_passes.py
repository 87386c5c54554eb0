"""Pass balances: credited once per paid order, redeemed under a lock (invariant 5)."""

from __future__ import annotations

import asyncio
import uuid

import grpc
from liftfit.booking.v1 import booking_pb2 as pb
from liftfit.booking.v1 import events_pb2 as ev
from liftfit.payment.v1 import events_pb2 as pay

from servicekit.grpc_server import reason_of
from tests.booking.harness import BookingHarness, eventually, new_id


async def _credit(booking: BookingHarness, org: str, entries: int, order_id: str) -> None:
    """The payment service announcing a paid pass order: its payment's success, then the
    credit, as it does (under the order's key)."""
    payment_id = str(uuid.uuid5(uuid.NAMESPACE_URL, order_id))  # the order's one payment
    succeeded = pay.PaymentSucceeded(
        payment_id=payment_id, order_id=order_id, amount=pay.Money(amount=90000, currency="CZK")
    )
    await booking.publish("payment.events", order_id, succeeded)
    paid = pay.PassOrderPaid(order_id=order_id, org_id=org, entries=entries, plan_code="pass-10")
    await booking.publish("payment.events", order_id, paid)


async def _balance(booking: BookingHarness, org: str) -> pb.PassBalance:
    return await booking.stub.GetPassBalance(pb.GetPassBalanceRequest(org_id=org))


async def _balance_reaches(booking: BookingHarness, org: str, expected: int) -> None:
    async def reached() -> bool:
        return (await _balance(booking, org)).balance == expected

    await eventually(reached)


async def test_a_paid_pass_order_is_credited_once_however_often_it_is_announced(
    booking: BookingHarness,
) -> None:
    org, order_id = new_id(), new_id()
    for _ in range(3):
        await _credit(booking, org, 10, order_id)
    await _credit(booking, org, 5, new_id())
    await _balance_reaches(booking, org, 15)
    await asyncio.sleep(0.5)  # the repeats are consumed too, and change nothing
    balance = await _balance(booking, org)
    assert balance.balance == 15 and sorted(e.delta for e in balance.entries) == [5, 10]
    assert len(await booking.published(ev.PassEntriesCredited)) == 2


async def test_ten_redemptions_racing_for_the_last_entry_leave_exactly_one_booking(
    booking: BookingHarness,
) -> None:
    slots = await booking.space_with_slots(10)
    org = new_id()
    await _credit(booking, org, 1, new_id())
    await _balance_reaches(booking, org, 1)

    async def redeem(slot: pb.Slot) -> str:
        try:
            reply = await booking.checkout(slot.slot_id, org, payment_mode="pass")
        except grpc.aio.AioRpcError as error:
            return reason_of(error)
        return reply.booking.state

    outcomes = await asyncio.gather(*(redeem(slot) for slot in slots))
    assert sorted(outcomes) == ["confirmed"] + ["insufficient_pass_balance"] * 9
    balance = await _balance(booking, org)
    assert balance.balance == 0 == sum(entry.delta for entry in balance.entries)
    states = [(await booking.slot(slot)).state for slot in slots]
    assert sorted(states) == ["available"] * 9 + ["booked"]


async def test_cancelling_a_pass_booking_gives_the_entry_back(booking: BookingHarness) -> None:
    [slot] = await booking.space_with_slots(1)
    org = new_id()
    await _credit(booking, org, 1, new_id())
    await _balance_reaches(booking, org, 1)
    reply = await booking.checkout(slot.slot_id, org, payment_mode="pass")
    assert reply.booking.state == "confirmed"
    cancelled = await booking.cancel(org, reply.booking.booking_id)
    assert cancelled.booking.state == "cancelled"
    balance = await _balance(booking, org)
    assert [entry.delta for entry in balance.entries] == [1, -1, 1] and balance.balance == 1
    [announced] = await booking.published(ev.BookingCancelled)
    assert not announced.refund_due
