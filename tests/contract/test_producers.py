"""Each producer's events, as it really emits them (read from its outbox after a scenario
that makes it emit every kind its consumers read), give every consumer what it declares."""

from __future__ import annotations

import uuid
from typing import Any

from google.protobuf.message import Message
from liftfit.booking.v1 import events_pb2 as booking_events
from liftfit.payment.v1 import events_pb2 as pay
from liftfit.payment.v1 import payment_pb2
from sqlalchemy import Table, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from servicekit import envelope
from services.access.adapters import orm as access_orm
from services.access.domain.commands import DisclosePin
from services.access.service_layer import handlers
from services.booking.adapters import orm as booking_orm
from tests.access.harness import AccessHarness
from tests.booking.harness import BookingHarness, new_id
from tests.contract.events import shape_problems, unmet
from tests.payment.harness import Harness, eventually

BOOKING, PAYMENT, ACCESS = "liftfit.booking.v1.", "liftfit.payment.v1.", "liftfit.access.v1."


async def _outbox_events(
    sessions: async_sessionmaker[AsyncSession], outbox: Table
) -> list[Message]:
    async with sessions() as session:
        rows = await session.execute(select(outbox.c.payload).order_by(outbox.c.seq))
        return [envelope.unpack(envelope.parse(row.payload)) for row in rows]


async def _booking_emits_every_kind(booking: BookingHarness) -> list[Message]:
    """Checkout by card; a failed payment; a cancellation; money after the cancellation;
    a paid booking moved to another slot."""
    slots = await booking.space_with_slots(5)
    org = new_id()
    await booking.checkout(slots[0].slot_id, org)
    failed = (await booking.checkout(slots[1].slot_id, org)).booking
    event = pay.PaymentFailed(payment_id=new_id(), booking_id=failed.booking_id, state="failed")
    await booking.consumed(await booking.publish("payment.events", event.payment_id, event))
    cancelled = (await booking.checkout(slots[2].slot_id, org)).booking
    await booking.cancel(org, cancelled.booking_id)
    paid = pay.PaymentSucceeded(
        payment_id=new_id(),
        booking_id=cancelled.booking_id,
        amount=pay.Money(amount=45000, currency="CZK"),
    )
    await booking.consumed(await booking.publish("payment.events", paid.payment_id, paid))
    moved = (await booking.checkout(slots[3].slot_id, org)).booking
    settled = pay.PaymentSucceeded(
        payment_id=new_id(),
        booking_id=moved.booking_id,
        amount=pay.Money(amount=45000, currency="CZK"),
    )
    await booking.consumed(await booking.publish("payment.events", settled.payment_id, settled))
    await booking.reschedule(org, moved.booking_id, slots[4].slot_id)
    return await _outbox_events(booking.app.uows.sessions, booking_orm.eventing.outbox)


async def _access_emits_every_kind(access: AccessHarness) -> list[Message]:
    """A PIN read, then the booking cancelled and its code removed."""
    booking = await access.confirm()
    await access.run_jobs()
    command = DisclosePin.of(booking.org_id, booking.booking_id, "anna", "customer_view")
    async with access.app.deps.uows.transaction() as uow:
        await handlers.disclose_pin(uow, command)
    await access.cancel(booking)
    await access.run_jobs()
    return await _outbox_events(access.app.deps.uows.sessions, access_orm.eventing.outbox)


async def _payment_emits_every_kind(harness: Harness) -> list[Message]:
    """A payment paid and then refunded for its cancelled booking, one failed, a pass order
    paid."""
    paid = await harness.opened_payment()
    await harness.settle(paid.provider_payment_id)
    await harness.payment_in(paid.booking_id, "paid")
    cancelled = booking_events.BookingCancelled(
        booking_id=paid.booking_id, payment_id=paid.payment_id, refund_due=True
    )
    await harness.publish(cancelled, paid.booking_id)
    await harness.payment_in(paid.booking_id, "refunded")
    failed = await harness.opened_payment()
    await harness.settle(failed.provider_payment_id, "fail")
    await harness.payment_in(failed.booking_id, "failed")
    order = await _paid_pass_order(harness)

    async def order_paid() -> bool:
        return await _order_state(harness, order) == "paid"

    await eventually(order_paid)
    return await _outbox_events(harness.app.sessions, harness.app.tables.eventing.outbox)


async def _paid_pass_order(harness: Harness) -> str:
    code = f"pass-{uuid.uuid4().hex[:6]}"
    plan = payment_pb2.Plan(
        plan_code=code,
        plan_version=1,
        kind="pass",
        name=code,
        price=pay.Money(amount=99000, currency="CZK"),
        entries=10,
    )
    await harness.stub.CreatePlan(payment_pb2.CreatePlanRequest(plan=plan))
    request = payment_pb2.CreateOrderRequest(
        org_id=new_id(), user="anna", idempotency_key="k1", plan_code=code, plan_version=1
    )
    order = (await harness.stub.CreateOrder(request)).order

    async def checkout_url() -> Any:
        found = await harness.stub.GetOrder(
            payment_pb2.GetOrderRequest(org_id=order.org_id, order_id=order.order_id)
        )
        return found.payment.provider_payment_id or None

    await harness.settle(await eventually(checkout_url))
    return str(order.order_id)


async def _order_state(harness: Harness, order_id: str) -> str:
    orders = harness.app.tables.orders
    async with harness.app.sessions() as session:
        query = select(orders.c.state).where(orders.c.order_id == uuid.UUID(order_id))
        return str((await session.execute(query)).scalar_one())


def test_every_declared_field_exists_in_the_contract_with_its_type() -> None:
    assert shape_problems() == []


async def test_the_booking_service_gives_its_consumers_what_they_read(
    booking: BookingHarness,
) -> None:
    assert unmet(BOOKING, await _booking_emits_every_kind(booking)) == []


async def test_the_payment_service_gives_its_consumers_what_they_read(harness: Harness) -> None:
    assert unmet(PAYMENT, await _payment_emits_every_kind(harness)) == []


async def test_the_access_service_gives_its_consumers_what_they_read(
    access: AccessHarness,
) -> None:
    assert unmet(ACCESS, await _access_emits_every_kind(access)) == []


async def test_an_emitted_event_missing_a_field_its_consumer_reads_names_that_consumer(
    booking: BookingHarness,
) -> None:
    emitted = await _booking_emits_every_kind(booking)
    requested = next(e for e in emitted if e.DESCRIPTOR.name == "PaymentRequested")
    requested.ClearField("org_id")  # as if the producer had stopped filling it in
    assert unmet(BOOKING, emitted) == [
        "payment reads liftfit.booking.v1.PaymentRequested.org_id (the organisation that pays),"
        " unset in an emitted one"
    ]
