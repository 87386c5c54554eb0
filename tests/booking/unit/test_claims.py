"""What booking believes of a payment event, and of a pass credit, with no I/O."""

from __future__ import annotations

from dataclasses import replace

from services.booking.domain.model import BookingState, Money, PaymentMode
from services.booking.domain.pass_orders import PassOrder
from services.booking.domain.payment_claims import (
    PAYMENT_CONFLICT,
    PAYMENT_REFUSED,
    payment_conflict,
    refusal_of_payment,
)
from tests.booking.unit.test_domain import _booking

PAID = Money(100, "CZK")


def test_the_bookings_own_payment_at_its_price_is_believed_and_any_other_refused() -> None:
    booking = replace(_booking(), payment_id="p1")
    price = booking.price
    assert refusal_of_payment(booking, "p1", price) is None
    assert refusal_of_payment(replace(booking, payment_id=None), "p9", price) is None
    refused = {
        "another payment": refusal_of_payment(booking, "p2", price),
        "no amount": refusal_of_payment(booking, "p1", None),
        "another amount": refusal_of_payment(booking, "p1", Money(price.amount + 1, "CZK")),
        "another currency": refusal_of_payment(booking, "p1", Money(price.amount, "EUR")),
        "a pass booking": refusal_of_payment(
            replace(booking, payment_mode=PaymentMode.PASS, payment_id=None), "p1", price
        ),
    }
    for case, refusal in refused.items():
        assert refusal is not None and refusal.kind == PAYMENT_REFUSED, case
        assert "refused, nothing changed" in refusal.detail, case


def test_a_payment_created_for_a_booking_holding_another_payment_is_a_conflict() -> None:
    confirmed = replace(_booking(BookingState.CONFIRMED), payment_id="p1", paid=True)
    assert payment_conflict(confirmed, "p1") is None
    assert payment_conflict(replace(confirmed, payment_id=None), "p2") is None
    conflict = payment_conflict(confirmed, "p2")
    assert conflict is not None and conflict.kind == PAYMENT_CONFLICT
    assert "p1" in conflict.detail and "p2" in conflict.detail


def test_a_pass_credit_needs_its_orders_payment_and_the_first_credit_decides() -> None:
    order = PassOrder("o1")
    assert order.record_credit("org", 10) is not None  # never paid
    assert (order.org_id, order.entries) == (None, None)  # nothing kept of it
    assert order.record_payment("p1", None) is not None  # no amount said
    assert order.record_payment("p1", PAID) is None
    assert order.record_payment("p1", PAID) is None  # told again
    assert order.record_payment("p2", PAID) is not None  # a second payment
    assert order.record_credit("org", 10) is None
    assert order.record_credit("org", 10) is None  # told again
    assert order.record_credit("other", 10) is not None
    assert order.record_credit("org", 50) is not None
    assert (order.payment_id, order.org_id, order.entries) == ("p1", "org", 10)
