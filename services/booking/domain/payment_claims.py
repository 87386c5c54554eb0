"""What a payment event claims, checked against what this service owns.

Only the payment service may write its topic, but whoever holds its credentials, or a
defect in it, can write anything there; so a payment-succeeded event is believed only when
it names a payment this service expects, for the booking's own price. An event that does
not is refused: it changes nothing and is kept as an incident, in words, for a human.

What the booking knows of its payment:
- its price and currency, copied at checkout into the booking and, through
  PaymentRequested, into the payment's snapshot; the payment service announces a success
  only with that snapshot's amount, so any other amount, or none, is not its word;
- the payment's id, once PaymentCreated arrives. Both events are keyed by the booking id,
  so PaymentCreated comes first in the common case, but the relay does not promise per-key
  order (a row retried later, or claimed by another lane, can overtake it). So a success
  for a booking with no recorded payment is believed on its amount and currency alone, and
  its payment id is recorded then: a PaymentCreated naming another payment afterwards is an
  incident, and the gateway's drift finds the booking confirmed while its own payment is
  not paid. Refusing it instead would lose a customer's legitimate, reordered payment.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.booking.domain.model import Booking, Money, PaymentMode

# The incidents' kinds: an event not believed, and a second payment for one booking.
PAYMENT_REFUSED = "payment_event_refused"
PAYMENT_CONFLICT = "payment_id_conflict"


@dataclass(frozen=True)
class Refusal:
    """Why an event was not believed, said for an operator."""

    kind: str
    detail: str


def refusal_of_payment(booking: Booking, payment_id: str, amount: Money | None) -> Refusal | None:
    """None when the event names the booking's own payment for its own price."""
    why = _mismatch(booking, payment_id, amount)
    return None if why is None else _refused(booking.booking_id, payment_id, why)


def payment_for_unknown_booking(booking_id: str, payment_id: str) -> Refusal:
    return _refused(booking_id, payment_id, "this service holds no such booking")


def _refused(booking_id: str, payment_id: str, why: str) -> Refusal:
    said = f"a payment-succeeded event for booking {booking_id} named payment {payment_id}"
    return Refusal(PAYMENT_REFUSED, f"{said}, but {why}: refused, nothing changed")


def _mismatch(booking: Booking, payment_id: str, amount: Money | None) -> str | None:
    if booking.payment_mode is PaymentMode.PASS:
        return "the booking was paid with a pass entry and has no card payment"
    if booking.payment_id and booking.payment_id != payment_id:
        return f"the booking's payment is {booking.payment_id}"
    if amount is None:
        return f"it said no amount, and the booking costs {_said(booking.price)}"
    if amount != booking.price:
        return f"it said {_said(amount)}, and the booking costs {_said(booking.price)}"
    return None


def payment_conflict(booking: Booking, payment_id: str) -> Refusal | None:
    """A PaymentCreated for a booking that already holds another payment's id."""
    if not booking.payment_id or booking.payment_id == payment_id:
        return None
    detail = (
        f"the payment service created payment {payment_id} for booking {booking.booking_id},"
        f" which is {booking.state.value} with payment {booking.payment_id}: the earlier"
        " payment's event was not the payment service's, or it made two payments for one"
        " booking"
    )
    return Refusal(PAYMENT_CONFLICT, detail)


def _said(money: Money) -> str:
    return f"{money.amount} {money.currency} (minor units)"
