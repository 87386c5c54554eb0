"""Every operation the history shows as accepted is reflected in the stores: no lost
booking, order, cancellation, move, payment or PIN read, and a replayed key named what its
first answer named. A history line that cannot be read is itself reported."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from chaos.auditor.findings import Findings
from chaos.auditor.snapshots import Booking, Charge, Order, Stores
from chaos.history import NO_ANSWER, History, Kind, Operation

READABLE = "history_readable"
REFLECTED = "accepted_operation_reflected_in_the_stores"
REPLAYS_AGREE = "replayed_key_names_the_same_resource"

MODES = {Kind.CHECKOUT_CARD: "card", Kind.CHECKOUT_PASS: "pass"}


@dataclass(frozen=True)
class Seen:
    """The stores indexed by the ids a history names."""

    orgs: set[str]
    bookings: dict[str, Booking]
    orders: dict[str, Order]
    charges: dict[str, Charge]
    pins_read: set[str]  # bookings whose PIN a customer read

    @classmethod
    def of(cls, stores: Stores) -> Seen:
        return cls(
            stores.orgs,
            {b.booking_id: b for b in stores.bookings},
            {o.order_id: o for o in stores.orders},
            {c.charge_id: c for c in stores.charges},
            {d.booking_id for d in stores.disclosures if d.purpose == "customer_view"},
        )


def check_history(stores: Stores, history: History) -> Findings:
    findings = Findings()
    findings.checking(READABLE, len(history.operations) + len(history.unreadable))
    for line in history.unreadable:
        findings.violated(
            READABLE, {"line": str(line.number)}, history=f"{line.why}: {line.text!r}"
        )
    accepted = [op for op in history.operations if op.accepted]
    # A move whose answer never came (or was the platform's failure) may have been made: the
    # history cannot say where the booking went, only the booking's own count of moves can.
    last_move = {
        op.booking_id: op
        for op in history.operations
        if op.kind is Kind.RESCHEDULE and (op.accepted or _may_have_acted(op))
    }
    cancelled = {op.booking_id for op in accepted if op.kind is Kind.CANCEL}
    seen = Seen.of(stores)
    for op in accepted:
        problem = _reflected(seen, op, last_move, cancelled)
        if problem is None:
            continue
        findings.check(
            REFLECTED,
            not problem,
            _ids(op),
            history=f"{op.kind.value} answered {op.status} at {op.at.isoformat()} to {op.customer}",
            stores=problem or "",
        )
    _replays(findings, accepted)
    return findings


def _may_have_acted(op: Operation) -> bool:
    """No answer came, or the platform's own failure: the request may have been acted on."""
    return op.status == NO_ANSWER or op.status >= 500


def _reflected(
    seen: Seen, op: Operation, last_move: dict[str | None, Operation], cancelled: set[str | None]
) -> str | None:
    """What is missing ('' when nothing is), or None when the operation leaves nothing to see."""
    if op.org_id is not None and op.org_id not in seen.orgs:
        return f"gateway: no organisation {op.org_id}"
    booking = seen.bookings.get(op.booking_id or "")
    if op.kind in MODES or op.kind in (Kind.CANCEL, Kind.RESCHEDULE):
        if op.booking_id is None:
            return None
        if booking is None:
            return "booking: not found"
    if op.kind in MODES and booking is not None:
        moved = op.booking_id in last_move and booking.moves >= 1
        if (
            booking.payment_mode != MODES[op.kind]
            or (op.org_id or booking.org_id) != booking.org_id
        ):
            return f"booking: {booking.payment_mode} for org {booking.org_id}"
        if not moved and op.slot_id is not None and booking.slot_id != op.slot_id:
            return f"booking: on slot {booking.slot_id}, never moved"
        return ""
    if op.kind is Kind.CANCEL and booking is not None:
        return "" if booking.state == "cancelled" else f"booking: {booking.state}"
    if op.kind is Kind.RESCHEDULE and booking is not None:
        if op.booking_id in cancelled or last_move[op.booking_id] is not op:
            return ""  # a later move (or try of one) or a cancellation decides where it is
        if booking.slot_id != op.slot_id or booking.moves < 1:
            return f"booking: {booking.state} on slot {booking.slot_id}, {booking.moves} moves"
        return ""
    return _other(seen, op)


def _other(seen: Seen, op: Operation) -> str | None:
    if op.kind is Kind.BUY_PASS and op.order_id is not None:
        order = seen.orders.get(op.order_id)
        if order is None:
            return "payment: no such order"
        return "" if op.org_id in (None, order.org_id) else f"payment: order of {order.org_id}"
    if op.kind is Kind.PAY and op.payment_id is not None:
        charge = seen.charges.get(op.payment_id)
        state = charge.state if charge else "not found"
        return "" if state in ("paid", "refunded") else f"card_gateway: {state}"
    if op.kind is Kind.READ_PIN and op.booking_id is not None:
        return (
            ""
            if op.booking_id in seen.pins_read
            else "access: no customer_view disclosure of the booking"
        )
    return None


def _replays(findings: Findings, accepted: list[Operation]) -> None:
    named: dict[tuple[Kind, str, str | None], set[str]] = defaultdict(set)
    for op in accepted:
        if op.key is not None and op.kind in (*MODES, Kind.BUY_PASS, Kind.CANCEL, Kind.RESCHEDULE):
            named[(op.kind, op.key, op.org_id)].add(op.order_id or op.booking_id or "")
    for (kind, key, org_id), resources in named.items():
        findings.check(
            REPLAYS_AGREE,
            len(resources) == 1,
            {"key": key, "org_id": org_id or ""},
            history=f"{kind.value} under one key named {sorted(resources)}",
        )


def _ids(op: Operation) -> dict[str, str]:
    names = ("org_id", "booking_id", "order_id", "payment_id", "slot_id", "key")
    return {name: value for name in names if (value := getattr(op, name)) is not None}
