"""The saga believes a payment event only for the booking's own payment, at its price.

Each event is published on payment.events as the payment service's relay would (anyone
with its credentials could); the test waits until the inbox recorded it, then looks."""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.message import Message
from liftfit.booking.v1 import booking_pb2 as bpb
from liftfit.booking.v1 import events_pb2 as ev
from liftfit.ops.v1 import operations_pb2 as opb
from liftfit.payment.v1 import events_pb2 as pay

from services.booking.domain.pass_orders import PASS_CREDIT, credit_reference
from tests.booking.harness import BookingHarness, eventually, new_id
from tests.operations.operator import operations

PRICE = pay.Money(amount=45000, currency="CZK")


@dataclass(frozen=True)
class Held:
    """A pending card booking whose payment the payment service announced."""

    org: str
    slot: bpb.Slot
    booking_id: str
    payment_id: str


async def _held_with_payment(booking: BookingHarness) -> Held:
    [slot] = await booking.space_with_slots(1)
    org = new_id()
    booking_id = (await booking.checkout(slot.slot_id, org)).booking.booking_id
    payment_id = new_id()
    created = pay.PaymentCreated(payment_id=payment_id, booking_id=booking_id)
    await booking.consumed(await booking.publish("payment.events", booking_id, created))
    assert (await booking.booking(org, booking_id)).payment_id == payment_id
    return Held(org, slot, booking_id, payment_id)


async def _succeeded(booking: BookingHarness, event: pay.PaymentSucceeded) -> None:
    await booking.consumed(await booking.publish("payment.events", event.booking_id, event))


def _paid(
    held: Held, amount: pay.Money | None = PRICE, payment_id: str = ""
) -> pay.PaymentSucceeded:
    """The success of the held booking's payment, or of `payment_id`, saying `amount`."""
    return pay.PaymentSucceeded(
        payment_id=payment_id or held.payment_id, booking_id=held.booking_id, amount=amount
    )


async def _open_incident(booking: BookingHarness, booking_id: str) -> opb.Incident:
    listed = await operations(booking.channel).ListIncidents(opb.ListIncidentsRequest(state="open"))
    [incident] = [i for i in listed.incidents if i.subject_id == booking_id]
    return incident


async def _finding(booking: BookingHarness, booking_id: str) -> opb.DriftFinding:
    listed = await operations(booking.channel).ListDriftFindings(
        opb.ListDriftFindingsRequest(state="open")
    )
    [finding] = [f for f in listed.findings if f.subject_id == booking_id]
    return finding


async def _refused_and_explained(booking: BookingHarness, held: Held, told: str) -> None:
    """Nothing changed, nothing was announced, and an incident and drift say why."""
    found = await booking.booking(held.org, held.booking_id)
    assert (found.state, found.payment_id) == ("pending", held.payment_id)
    assert (await booking.slot(held.slot)).state == "held"
    assert await booking.published(ev.BookingConfirmed) == []
    assert await booking.published(ev.PaymentWithoutBooking) == []
    incident = await _open_incident(booking, held.booking_id)
    assert incident.kind == "payment_event_refused"
    assert told in incident.detail and "refused, nothing changed" in incident.detail
    finding = await _finding(booking, held.booking_id)
    assert (finding.kind, finding.needs_human) == ("payment_event_refused", True)
    assert told in finding.problem and "payment" in finding.repair


async def test_a_success_naming_another_payment_does_not_confirm_and_is_an_incident(
    booking: BookingHarness,
) -> None:
    held = await _held_with_payment(booking)
    forged = new_id()
    await _succeeded(booking, _paid(held, payment_id=forged))
    await _refused_and_explained(booking, held, f"the booking's payment is {held.payment_id}")


async def test_a_success_of_the_bookings_payment_at_another_amount_is_refused(
    booking: BookingHarness,
) -> None:
    held = await _held_with_payment(booking)
    less = pay.Money(amount=100, currency="CZK")
    await _succeeded(booking, _paid(held, less))
    await _refused_and_explained(booking, held, "it said 100 CZK")


async def test_a_success_of_the_bookings_payment_in_another_currency_is_refused(
    booking: BookingHarness,
) -> None:
    held = await _held_with_payment(booking)
    euros = pay.Money(amount=45000, currency="EUR")
    await _succeeded(booking, _paid(held, euros))
    await _refused_and_explained(booking, held, "it said 45000 EUR")


async def test_a_success_that_says_no_amount_is_refused(booking: BookingHarness) -> None:
    held = await _held_with_payment(booking)
    await _succeeded(booking, _paid(held, None))
    await _refused_and_explained(booking, held, "it said no amount")


async def test_the_bookings_own_payment_at_its_price_still_confirms_it(
    booking: BookingHarness,
) -> None:
    held = await _held_with_payment(booking)
    await _succeeded(booking, _paid(held))
    assert (await booking.booking(held.org, held.booking_id)).state == "confirmed"
    [confirmed] = await booking.published(ev.BookingConfirmed)
    assert confirmed.payment_id == held.payment_id


async def test_a_forged_success_for_a_confirmed_booking_refunds_nothing(
    booking: BookingHarness,
) -> None:
    """Before, it announced PaymentWithoutBooking, and the payment service refunded the
    booking's real payment while the booking stayed confirmed."""
    held = await _held_with_payment(booking)
    await _succeeded(booking, _paid(held))
    await _succeeded(booking, _paid(held, payment_id=new_id()))
    assert (await booking.booking(held.org, held.booking_id)).state == "confirmed"
    assert await booking.published(ev.PaymentWithoutBooking) == []
    incident = await _open_incident(booking, held.booking_id)
    assert f"the booking's payment is {held.payment_id}" in incident.detail


async def test_a_payment_created_after_another_payment_confirmed_the_booking_is_an_incident(
    booking: BookingHarness,
) -> None:
    """A success that overtook its PaymentCreated is believed on its price; a payment the
    payment service then announces under another id shows that it was not its word."""
    [slot] = await booking.space_with_slots(1)
    org = new_id()
    held = (await booking.checkout(slot.slot_id, org)).booking
    early = new_id()
    await _succeeded(
        booking, pay.PaymentSucceeded(payment_id=early, booking_id=held.booking_id, amount=PRICE)
    )
    assert (await booking.booking(org, held.booking_id)).state == "confirmed"
    real = new_id()
    created = pay.PaymentCreated(payment_id=real, booking_id=held.booking_id)
    await booking.consumed(await booking.publish("payment.events", held.booking_id, created))
    found = await booking.booking(org, held.booking_id)
    assert (found.state, found.payment_id) == ("confirmed", early)
    incident = await _open_incident(booking, held.booking_id)
    assert incident.kind == "payment_id_conflict"
    assert real in incident.detail and early in incident.detail
    finding = await eventually(lambda: _finding(booking, held.booking_id))
    assert finding.kind == "payment_id_conflict"


# --- pass orders ------------------------------------------------------------------------


async def _announced(booking: BookingHarness, order_id: str, event: Message) -> None:
    await booking.consumed(await booking.publish("payment.events", order_id, event))


def _order_paid(order_id: str, org: str, entries: int = 50) -> pay.PassOrderPaid:
    return pay.PassOrderPaid(order_id=order_id, org_id=org, entries=entries, plan_code="pass-50")


def _order_payment(order_id: str, payment_id: str) -> pay.PaymentSucceeded:
    money = pay.Money(amount=500000, currency="CZK")
    return pay.PaymentSucceeded(payment_id=payment_id, order_id=order_id, amount=money)


async def _balance(booking: BookingHarness, org: str) -> int:
    reply = await booking.stub.GetPassBalance(bpb.GetPassBalanceRequest(org_id=org))
    return reply.balance


async def test_a_pass_credit_for_an_order_never_paid_credits_nothing_and_is_explained(
    booking: BookingHarness,
) -> None:
    org, order_id = new_id(), new_id()
    await _announced(booking, order_id, _order_paid(order_id, org))
    assert await _balance(booking, org) == 0
    assert await booking.published(ev.PassEntriesCredited) == []
    incident = await _open_incident(booking, order_id)
    assert incident.kind == "pass_credit_refused"
    assert "never said that the order's payment succeeded" in incident.detail
    finding = await _finding(booking, order_id)
    assert finding.kind == "pass_credit_refused" and org in finding.problem
    assert "replay" in finding.repair


async def test_a_pass_credit_after_its_payment_is_credited_once_and_a_changed_one_refused(
    booking: BookingHarness,
) -> None:
    org, order_id = new_id(), new_id()
    await _announced(booking, order_id, _order_payment(order_id, new_id()))
    await _announced(booking, order_id, _order_paid(order_id, org))
    await _announced(booking, order_id, _order_paid(order_id, org))  # announced again
    assert await _balance(booking, org) == 50
    other = new_id()
    await _announced(booking, order_id, _order_paid(order_id, other))
    assert await _balance(booking, other) == 0
    assert len(await booking.published(ev.PassEntriesCredited)) == 1
    incident = await _open_incident(booking, order_id)
    assert f"organisation {other}" in incident.detail and "before" in incident.detail


async def test_a_pass_credit_that_overtook_its_payment_is_credited_when_replayed(
    booking: BookingHarness,
) -> None:
    org, order_id = new_id(), new_id()
    await _announced(booking, order_id, _order_paid(order_id, org))
    await _announced(booking, order_id, _order_payment(order_id, new_id()))
    assert await _balance(booking, org) == 0
    await _announced(booking, order_id, _order_paid(order_id, org))  # the operator's replay
    assert await _balance(booking, org) == 50


async def test_a_credit_without_a_paid_order_is_drift_and_a_paid_one_is_not(
    booking: BookingHarness,
) -> None:
    """A credit made before this service recorded orders' payments (written here as the
    handler did then) is named; one made for a paid order is not."""
    org, unpaid, paid = new_id(), new_id(), new_id()
    async with booking.app.uows.transaction() as uow:
        balance = await uow.passes.lock(org)
        credited, entry = balance.credit(50, PASS_CREDIT, credit_reference(unpaid))
        await uow.passes.apply(credited, entry)
    await _announced(booking, paid, _order_payment(paid, new_id()))
    await _announced(booking, paid, _order_paid(paid, org))
    assert await _balance(booking, org) == 100
    finding = await _finding(booking, unpaid)
    assert finding.kind == "pass_credit_without_paid_order"
    assert org in finding.problem and "50 pass entries" in finding.problem
    listed = await operations(booking.channel).ListDriftFindings(opb.ListDriftFindingsRequest())
    assert [f for f in listed.findings if f.subject_id == paid] == []
