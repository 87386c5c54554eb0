"""Each consumer applies the committed golden sample of every event version it reads,
through its real inbox and handlers on PostgreSQL, and ends in the state the event means."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from liftfit.access.v1 import events_pb2 as access
from liftfit.booking.v1 import booking_pb2 as bpb
from liftfit.booking.v1 import events_pb2 as booking_events
from liftfit.payment.v1 import events_pb2 as payment_events

from servicekit.inbox import Inbox
from servicekit.records import Delivery
from services.access.domain.model import GrantState
from services.booking.domain.model import Booking, BookingState, Money, PaymentMode, SlotState
from services.booking.service_layer.event_handlers import record_order_paid
from tests.access.harness import DEVICE, AccessHarness
from tests.booking.harness import BookingHarness
from tests.contract import golden_samples as golden
from tests.contract.events import CONSUMERS
from tests.notify.harness import NotifyHarness
from tests.payment.harness import Harness

_offsets = iter(range(1_000_000))


async def _apply(inbox: Inbox, prefix: str, kind: type) -> str:
    sample = golden.sample_of(kind)
    delivery = Delivery(
        prefix + sample.topic,
        0,
        next(_offsets),
        golden.committed(sample),
        key=sample.aggregate_id.encode(),
    )
    return await inbox.deliver(delivery)


def test_every_event_a_consumer_reads_has_a_committed_golden_sample() -> None:
    consumed = {kind for events in CONSUMERS.values() for kind in events}
    sampled = {sample.event.DESCRIPTOR.full_name for sample in golden.SAMPLES}
    assert consumed == sampled
    for sample in golden.SAMPLES:
        assert sample.path.exists(), f"{sample.path.name} is not committed"


# --- the booking service -----------------------------------------------------------------


async def _pending_booking(harness: BookingHarness, booking_id: str) -> None:
    """A card checkout's booking under the fixed id a golden sample names."""
    [slot_message] = await harness.space_with_slots(1)
    async with harness.app.uows.transaction() as uow:
        slot = await uow.slots.lock(slot_message.slot_id)
        slot.state, slot.holder = SlotState.HELD, booking_id  # as card_checkout holds it
        await uow.bookings.add(
            Booking(
                booking_id=booking_id,
                org_id=golden.ORG,
                user="anna",
                slot_id=slot.slot_id,
                space_id=slot.space_id,
                slot_during=slot.during,
                window=slot.during,
                party_size=1,
                payment_mode=PaymentMode.CARD,
                price=slot.price,
                terms_version="2026-11",
                state=BookingState.PENDING,
                hold_expires_at=datetime.now(UTC) + timedelta(minutes=15),
            )
        )
        await uow.slots.save(slot)


async def _booking(harness: BookingHarness, booking_id: str) -> bpb.Booking:
    return await harness.booking(golden.ORG, booking_id)


async def test_booking_applies_the_golden_payment_events(booking: BookingHarness) -> None:
    inbox, prefix = booking.app.inbox, booking.app.settings.topic_prefix
    await _pending_booking(booking, golden.BOOKING_CREATED)
    await _pending_booking(booking, golden.BOOKING_FAILED)

    assert await _apply(inbox, prefix, payment_events.PaymentCreated) == "processed"
    created = await _booking(booking, golden.BOOKING_CREATED)
    assert created.payment_id == golden.PAYMENT_CREATED
    assert await _apply(inbox, prefix, payment_events.PaymentSucceeded) == "processed"
    assert (await _booking(booking, golden.BOOKING_CREATED)).state == "confirmed"
    assert await _apply(inbox, prefix, payment_events.PaymentFailed) == "processed"
    assert (await _booking(booking, golden.BOOKING_FAILED)).state == "expired"
    async with booking.app.uows.transaction() as uow:  # a credit needs its order paid first
        order_payment = str(uuid.uuid4())
        await record_order_paid(uow, golden.ORDER, order_payment, Money(90000, "CZK"))
    assert await _apply(inbox, prefix, payment_events.PassOrderPaid) == "processed"
    balance = await booking.stub.GetPassBalance(bpb.GetPassBalanceRequest(org_id=golden.ORG))
    assert balance.balance == 10


async def test_booking_applies_the_golden_access_events(booking: BookingHarness) -> None:
    inbox, prefix = booking.app.inbox, booking.app.settings.topic_prefix
    assert await _apply(inbox, prefix, access.PinDisclosed) == "processed"
    async with booking.app.uows.transaction() as uow:
        disclosures = uow.disclosures
        assert await disclosures.outstanding_for(golden.BOOKING_DISCLOSED, golden.SLOT_DISCLOSED)
    assert await _apply(inbox, prefix, access.RevocationConfirmed) == "processed"
    async with booking.app.uows.transaction() as uow:
        outstanding = await uow.disclosures.outstanding_on_slot(golden.SLOT_DISCLOSED)
    assert not outstanding


# --- the payment service -----------------------------------------------------------------


async def test_payment_applies_the_golden_booking_events(harness: Harness) -> None:
    inbox, prefix = harness.app.inbox, harness.prefix
    assert await _apply(inbox, prefix, booking_events.PaymentRequested) == "processed"
    requested = await harness.payment_when(golden.BOOKING_REQUESTED, lambda p: True)
    assert (requested.amount.amount, requested.amount.currency) == (45000, "CZK")

    for booking_id, kind in (
        (golden.BOOKING_CANCELLED, booking_events.BookingCancelled),
        (golden.BOOKING_EXPIRED, booking_events.BookingExpired),
    ):
        await harness.request_payment(booking_id=booking_id)
        await harness.payment_when(booking_id, lambda p: bool(p.checkout_url))
        assert await _apply(inbox, prefix, kind) == "processed"
        await harness.payment_in(booking_id, "cancelled")

    await harness.request_payment(booking_id=golden.BOOKING_ORPHANED)
    paid = await harness.payment_when(golden.BOOKING_ORPHANED, lambda p: bool(p.checkout_url))
    await harness.settle(paid.provider_payment_id)
    await harness.payment_in(golden.BOOKING_ORPHANED, "paid")
    assert await _apply(inbox, prefix, booking_events.PaymentWithoutBooking) == "processed"
    await harness.payment_in(golden.BOOKING_ORPHANED, "refunded")


# --- the access service ------------------------------------------------------------------


async def test_access_applies_the_golden_booking_events(access: AccessHarness) -> None:
    inbox, prefix = access.app.inbox, access.app.settings.topic_prefix
    assert await _apply(inbox, prefix, booking_events.BookingConfirmed) == "processed"
    async with access.app.deps.uows.transaction() as uow:
        [planned] = await uow.grants.of_booking(golden.BOOKING_CONFIRMED)
    assert (planned.state, planned.slot_id, planned.org_id) == (
        GrantState.PLANNED,
        golden.SLOT_CONFIRMED,
        golden.ORG,
    )
    assert planned.window.valid_from.timestamp() == golden.WINDOW.valid_from.seconds
    assert planned.device_id == DEVICE  # the sample's space has no lock of its own here

    assert await _apply(inbox, prefix, booking_events.BookingRescheduled) == "processed"
    async with access.app.deps.uows.transaction() as uow:
        old, new = await uow.grants.of_booking(golden.BOOKING_CONFIRMED)
    assert (old.state, new.state) == (GrantState.REVOKED, GrantState.PLANNED)
    assert new.slot_id == golden.SLOT_MOVED_TO
    assert new.window.valid_from.timestamp() == golden.MOVED_WINDOW.valid_from.seconds

    confirmed = booking_events.BookingConfirmed(
        booking_id=golden.BOOKING_CANCELLED,
        org_id=golden.ORG,
        user="anna",
        slot_id=golden.sample_of(booking_events.BookingCancelled).event.slot_id,  # type: ignore[attr-defined]
        window=golden.WINDOW,
    )
    assert await access.deliver(golden.BOOKING_CANCELLED, confirmed) == "processed"
    assert await _apply(inbox, prefix, booking_events.BookingCancelled) == "processed"
    async with access.app.deps.uows.transaction() as uow:
        [cancelled] = await uow.grants.of_booking(golden.BOOKING_CANCELLED)
    assert cancelled.state is GrantState.REVOKED


# --- the notify service ------------------------------------------------------------------


async def test_notify_applies_the_golden_events(make_notify: Any) -> None:
    """Events of producers from before the contact snapshot carry no address: they are
    applied and make no mail. The refund's sample carries one: it makes its mail."""
    notify: NotifyHarness = await make_notify(start=False)
    inbox, prefix = notify.app.inbox, notify.prefix
    for kind in (
        booking_events.BookingConfirmed,
        booking_events.BookingRescheduled,
        booking_events.BookingCancelled,
        access.AccessActivated,
        payment_events.PaymentSucceeded,
        payment_events.PaymentRefunded,
        booking_events.SpaceCreated,
    ):
        assert await _apply(inbox, prefix, kind) == "processed", kind
    async with notify.app.deps.uows.transaction() as uow:
        assert await uow.timezone_of(golden.SPACE) == "America/New_York"
        assert await uow.deliveries.of_subject(golden.BOOKING_CONFIRMED) == []
        [refund] = await uow.deliveries.of_subject(golden.BOOKING_REFUNDED)
        assert await uow.access_mails.grants_of(golden.BOOKING_CONFIRMED) == [
            golden.GRANT_ACTIVATED
        ]
    assert (refund.template, refund.recipient, refund.locale, refund.state) == (
        "refund_completed",
        golden.REFUND_CONTACT,
        "en",
        "queued",
    )
