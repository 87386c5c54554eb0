"""Every charge at the card gateway has exactly one owner, and the sums agree to the unit.

A charge is a gateway payment that took money (paid, or paid and refunded). Its owner is a
confirmed booking or a paid order whose payment it is, at the same amount and currency, or
a refund of the whole amount under the payment's one refund key, or an open `refund_failed`
incident about its payment: invariant 9 lets a refund end `refund_failed` with an incident,
and 22 asks that such money be explained and left to a human decision, not owned by code.
The other way round, a confirmed card booking and a paid order each have exactly one charge
they keep.
"""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict

from chaos.auditor.findings import Findings
from chaos.auditor.snapshots import Booking, Charge, Incident, Payment, Stores
from services.payment.domain.payment import refund_key

TOOK_MONEY = ("paid", "refunded")

CHARGE_OWNED = "charge_owned_by_exactly_one"
OWNER_CHARGED = "owner_has_exactly_one_charge"
SUMS_AGREE = "sums_agree_to_the_unit"


def check_money(stores: Stores) -> Findings:
    findings = Findings()
    payments = {p.payment_id: p for p in stores.payments}
    kept: dict[str, list[Charge]] = defaultdict(list)  # owner id -> charges it keeps
    for charge in stores.charges:
        if charge.state not in TOOK_MONEY:
            continue
        payment = payments.get(charge.reference)
        owner, problem = _owner(stores, charge, payment)
        ids = {"charge_id": charge.charge_id, "payment_id": charge.reference}
        findings.check(
            CHARGE_OWNED,
            problem is None,
            ids | ({"owner": owner} if owner else {}),
            card_gateway=_says(charge),
            payment=_payment_says(payment),
            owner=problem or "",
        )
        if problem is None and owner and not owner.startswith(("refund:", "incident:")):
            kept[owner].append(charge)
    _owners_charged(stores, findings, kept)
    _sums(stores, findings)
    return findings


def _owner(stores: Stores, charge: Charge, payment: Payment | None) -> tuple[str, str | None]:
    """The charge's owner (booking id, order id or refund:<payment id>) and what is wrong."""
    if payment is None:
        return "", "no payment of the payment service has this reference"
    if (payment.amount, payment.currency) != (charge.amount, charge.currency):
        return "", f"the payment is of {payment.amount} {payment.currency}"
    incident = _decision_awaited(stores, payment)
    if incident is not None and payment.provider_payment_id == charge.charge_id:
        return f"incident:{incident.incident_id}", None
    if charge.refunded_amount:
        return _refund_owner(stores, charge, payment)
    if payment.provider_payment_id != charge.charge_id:
        return "", f"the payment's gateway payment is {payment.provider_payment_id}"
    if payment.state != "paid":
        return "", f"the payment is {payment.state}, the money kept"
    if payment.booking_id:
        return payment.booking_id, _booking_problem(stores, payment)
    order = next((o for o in stores.orders if o.order_id == payment.order_id), None)
    if order is None:
        return "", f"order {payment.order_id} not found"
    if order.state != "paid" or (order.amount, order.currency) != (charge.amount, charge.currency):
        return order.order_id, f"order {order.state} of {order.amount} {order.currency}"
    return order.order_id, None


def _refund_owner(stores: Stores, charge: Charge, payment: Payment) -> tuple[str, str | None]:
    refunds = [r for r in stores.refunds if r.charge_id == charge.charge_id]
    keys = {r.idempotency_key for r in refunds}
    total = sum(r.amount for r in refunds)
    owner = f"refund:{payment.payment_id}"
    if charge.state != "refunded" or charge.refunded_amount != charge.amount:
        return owner, f"refunded {charge.refunded_amount} of {charge.amount}: partly kept"
    if total != charge.amount or keys != {_refund_key(payment.payment_id)}:
        return owner, f"refunds {total} under keys {sorted(keys)}"
    if payment.state != "refunded" and payment.provider_payment_id == charge.charge_id:
        return owner, f"the payment is {payment.state} though refunded at the gateway"
    return owner, None


def _decision_awaited(stores: Stores, payment: Payment) -> Incident | None:
    """The open incident of a refund that failed, which leaves its money to an operator."""
    if payment.state != "refund_failed":
        return None
    return next(
        (
            incident
            for incident in stores.incidents_about(payment.payment_id)
            if incident.kind == "refund_failed" and incident.state == "open"
        ),
        None,
    )


def _booking_problem(stores: Stores, payment: Payment) -> str | None:
    booking = next((b for b in stores.bookings if b.booking_id == payment.booking_id), None)
    if booking is None:
        return "booking not found"
    if booking.state != "confirmed" or booking.payment_mode != "card":
        return f"booking {booking.state} ({booking.payment_mode}) keeps no money"
    if booking.payment_id not in (None, payment.payment_id):
        return f"the booking's payment is {booking.payment_id}"
    if (booking.price_amount, booking.currency) != (payment.amount, payment.currency):
        return f"booking price {booking.price_amount} {booking.currency}"
    return None


def _owners_charged(stores: Stores, findings: Findings, kept: dict[str, list[Charge]]) -> None:
    owners = [(b.booking_id, "booking") for b in stores.bookings if _keeps_money(b)]
    owners += [(o.order_id, "order") for o in stores.orders if o.state == "paid"]
    for owner_id, what in owners:
        charges = kept.get(owner_id, [])
        findings.check(
            OWNER_CHARGED,
            len(charges) == 1,
            {f"{what}_id": owner_id, "charge_ids": ",".join(c.charge_id for c in charges)},
            card_gateway=f"{len(charges)} charges kept for it",
            owner=f"{what} {owner_id} is confirmed or paid",
        )


def _keeps_money(booking: Booking) -> bool:
    return booking.state == "confirmed" and booking.payment_mode == "card"


def _sums(stores: Stores, findings: Findings) -> None:
    at_gateway: Counter[str] = Counter()
    refunded: Counter[str] = Counter()
    for charge in stores.charges:
        if charge.state in TOOK_MONEY:
            at_gateway[charge.currency] += charge.amount - charge.refunded_amount
            refunded[charge.currency] += charge.refunded_amount
    owed: Counter[str] = Counter()
    for booking in stores.bookings:
        if _keeps_money(booking):
            owed[booking.currency] += booking.price_amount
    for order in stores.orders:
        if order.state == "paid":
            owed[order.currency] += order.amount
    awaiting: Counter[str] = Counter()  # kept at the gateway while an operator decides
    for payment in stores.payments:
        if _decision_awaited(stores, payment) is not None:
            awaiting[payment.currency] += _kept_for(stores, payment)
    refunds: Counter[str] = Counter()
    charges = {c.charge_id: c for c in stores.charges}
    for refund in stores.refunds:
        returned = charges.get(refund.charge_id)
        refunds[returned.currency if returned else "?"] += refund.amount
    for currency in sorted(set(at_gateway) | set(owed) | set(refunded) | set(refunds)):
        findings.check(
            SUMS_AGREE,
            at_gateway[currency] == owed[currency] + awaiting[currency]
            and refunded[currency] == refunds[currency],
            {"currency": currency},
            card_gateway=f"kept {at_gateway[currency]}, refunded {refunded[currency]}, "
            f"refunds listed {refunds[currency]}",
            booking_and_payment=f"confirmed card bookings and paid orders {owed[currency]}, "
            f"failed refunds awaiting a decision {awaiting[currency]}",
        )


def _kept_for(stores: Stores, payment: Payment) -> int:
    """What the gateway still keeps of the payment's charge (0 if it refunded after all)."""
    charge = next((c for c in stores.charges if c.charge_id == payment.provider_payment_id), None)
    if charge is None or charge.state not in TOOK_MONEY:
        return 0
    return charge.amount - charge.refunded_amount


def _says(charge: Charge) -> str:
    return f"{charge.state} {charge.amount} {charge.currency}, refunded {charge.refunded_amount}"


def _payment_says(payment: Payment | None) -> str:
    if payment is None:
        return "not found"
    owner = f"booking {payment.booking_id}" if payment.booking_id else f"order {payment.order_id}"
    return (
        f"{payment.state} {payment.amount} {payment.currency} for {owner}, "
        f"gateway payment {payment.provider_payment_id}"
    )


def _refund_key(payment_id: str) -> str:
    try:
        return refund_key(uuid.UUID(payment_id))
    except ValueError:
        return f"(no refund key: payment id {payment_id!r} is not a UUID)"
