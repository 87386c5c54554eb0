"""The gateway's model: payments, refunds, idempotency records and faults.

Pure and synchronous on purpose: every operation runs to completion on the event loop
without awaiting, so no locking is needed, and the HTTP layer stays a thin translation.
State changes are recorded as events in an outbox which the HTTP layer drains and hands
to the notifier; that way no transition can be made without producing its notification.
Every payment and refund it changes is written to its records (sandboxes/records.py), from
which a restarted gateway restores them; the idempotency records follow from those two.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from sandboxes.faults import Faults as SandboxFaults
from sandboxes.records import Records

PaymentState = Literal["pending", "paid", "failed", "cancelled", "expired", "refunded"]
Outcome = Literal["succeed", "fail"]

# Transitions only move forward, as with a real provider: a final state is never left.
_ALLOWED: dict[PaymentState, frozenset[PaymentState]] = {
    "pending": frozenset({"paid", "failed", "cancelled", "expired"}),
    "paid": frozenset({"refunded"}),
}


def utc_now() -> datetime:
    return datetime.now(UTC)


def new_hex() -> str:
    return secrets.token_hex(12)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _moment(raw: object) -> datetime:
    return datetime.fromisoformat(str(raw))


class GatewayError(Exception):
    """A request the gateway refuses; carries the HTTP status and the API error code."""

    def __init__(self, status: int, code: str, payment: Payment | None = None) -> None:
        super().__init__(code)
        self.status = status
        self.code = code
        self.payment = payment


@dataclass(frozen=True)
class PaymentParams:
    """What a create call asks for; compared as a whole to detect idempotency-key reuse."""

    amount: int
    currency: str
    reference: str
    description: str | None = None
    return_url: str | None = None


@dataclass
class Payment:
    id: str
    params: PaymentParams
    idempotency_key: str
    created_at: datetime
    updated_at: datetime
    amount: int  # what the gateway reports; differs from params only after tampering
    currency: str
    state: PaymentState = "pending"
    refunded_amount: int = 0
    settling: bool = False  # a delayed settlement is under way; blocks a second one

    def to_api(self, public_url: str) -> dict[str, object]:
        return {
            "id": self.id,
            "amount": self.amount,
            "currency": self.currency,
            "reference": self.params.reference,
            "description": self.params.description,
            "return_url": self.params.return_url,
            "state": self.state,
            "checkout_url": f"{public_url}/checkout/{self.id}",
            "created_at": _iso(self.created_at),
            "updated_at": _iso(self.updated_at),
            "refunded_amount": self.refunded_amount,
        }

    def to_record(self) -> dict[str, object]:
        return {
            "id": self.id,
            "params": {
                "amount": self.params.amount,
                "currency": self.params.currency,
                "reference": self.params.reference,
                "description": self.params.description,
                "return_url": self.params.return_url,
            },
            "idempotency_key": self.idempotency_key,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "amount": self.amount,
            "currency": self.currency,
            "state": self.state,
            "refunded_amount": self.refunded_amount,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Payment:
        # A settlement under way died with the process: the customer's attempt lapsed.
        return cls(
            id=record["id"],
            params=PaymentParams(**record["params"]),
            idempotency_key=record["idempotency_key"],
            created_at=_moment(record["created_at"]),
            updated_at=_moment(record["updated_at"]),
            amount=record["amount"],
            currency=record["currency"],
            state=record["state"],
            refunded_amount=record["refunded_amount"],
        )


@dataclass
class Refund:
    id: str
    payment_id: str
    amount: int
    idempotency_key: str
    created_at: datetime
    state: Literal["succeeded"] = "succeeded"  # the sandbox settles refunds instantly

    def to_api(self) -> dict[str, object]:
        return {
            "id": self.id,
            "payment_id": self.payment_id,
            "amount": self.amount,
            "state": self.state,
            "created_at": _iso(self.created_at),
        }

    def to_record(self) -> dict[str, object]:
        return {
            "id": self.id,
            "payment_id": self.payment_id,
            "amount": self.amount,
            "idempotency_key": self.idempotency_key,
            "created_at": self.created_at.isoformat(),
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Refund:
        return cls(
            record["id"],
            record["payment_id"],
            record["amount"],
            record["idempotency_key"],
            _moment(record["created_at"]),
        )


@dataclass(frozen=True)
class IdempotencyRecord:
    fingerprint: object  # the request's parameters; equal means "the same request again"
    resource_id: str


@dataclass(frozen=True)
class Event:
    id: str
    created: int
    payment_id: str
    reference: str
    state: PaymentState
    type: str = "payment.updated"

    def to_body(self) -> dict[str, object]:
        return {
            "id": self.id,
            "type": self.type,
            "created": self.created,
            "data": {
                "payment_id": self.payment_id,
                "reference": self.reference,
                "state": self.state,
            },
        }


@dataclass
class Faults(SandboxFaults):
    """Misbehaviour switched on through the control API; counters count down per use."""

    duplicate_notifications: int = 0
    delay_notifications_ms: int = 0
    reorder_notifications: bool = False
    drop_notifications: bool = False
    timeout_next_creates: int = 0
    timeout_next_refunds: int = 0
    hang_seconds: float = 30.0
    fail_next_calls: int = 0
    settle_delay_ms: int = 0


@dataclass
class GatewayState:
    clock: Callable[[], datetime] = utc_now
    make_hex: Callable[[], str] = new_hex
    payments: dict[str, Payment] = field(default_factory=dict)
    refunds: dict[str, Refund] = field(default_factory=dict)
    idempotency: dict[tuple[str, str], IdempotencyRecord] = field(default_factory=dict)
    faults: Faults = field(default_factory=Faults)
    records: Records = field(default_factory=Records)
    _outbox: list[Event] = field(default_factory=list)

    def restore(self) -> None:
        """Read back the payments and refunds of the records, with their idempotency keys:
        a restarted gateway answers a retried request as the first one was answered."""
        for record in self.records.load("payment"):
            payment = Payment.from_record(record)
            self.payments[payment.id] = payment
            key = ("payment", payment.idempotency_key)
            self.idempotency[key] = IdempotencyRecord(payment.params, payment.id)
        refunded: dict[str, int] = {}
        for record in self.records.load("refund"):
            refund = Refund.from_record(record)
            self.refunds[refund.id] = refund
            fingerprint = (refund.payment_id, refund.amount)
            self.idempotency[("refund", refund.idempotency_key)] = IdempotencyRecord(
                fingerprint, refund.id
            )
            refunded[refund.payment_id] = refunded.get(refund.payment_id, 0) + refund.amount
        for payment_id, amount in refunded.items():
            payment = self.payments[payment_id]
            if payment.refunded_amount < amount:  # died between the refund and its payment
                payment.refunded_amount = 0
                for refund in self.refunds.values():
                    if refund.payment_id == payment_id:
                        self._apply_refund(payment, refund)
                self._save(payment)
        self._outbox.clear()  # the notifier restores its own unfinished deliveries

    # --- payments -------------------------------------------------------------------

    def create_payment(self, key: str, params: PaymentParams) -> tuple[Payment, bool]:
        """Return (payment, created); a replay of the same request returns the original."""
        replayed = self._replay(("payment", key), params)
        if replayed is not None:
            return self.payments[replayed], False
        now = self.clock()
        payment = Payment(
            id=f"pay_{self.make_hex()}",
            params=params,
            idempotency_key=key,
            created_at=now,
            updated_at=now,
            amount=params.amount,
            currency=params.currency,
        )
        self.payments[payment.id] = payment
        self.idempotency[("payment", key)] = IdempotencyRecord(params, payment.id)
        self._save(payment)
        return payment, True

    def get_payment(self, payment_id: str) -> Payment:
        payment = self.payments.get(payment_id)
        if payment is None:
            raise GatewayError(404, "not_found")
        return payment

    def find_by_reference(self, reference: str) -> list[Payment]:
        return [p for p in self.payments.values() if p.params.reference == reference]

    def cancel(self, payment_id: str) -> Payment:
        payment = self.get_payment(payment_id)
        if payment.state != "pending":
            raise GatewayError(409, "not_cancellable", payment)
        self._transition(payment, "cancelled")
        return payment

    def expire(self, payment_id: str) -> Payment:
        payment = self.get_payment(payment_id)
        if payment.state != "pending":
            raise GatewayError(409, "not_expirable", payment)
        self._transition(payment, "expired")
        return payment

    def tamper(self, payment_id: str, amount: int | None, currency: str | None) -> Payment:
        payment = self.get_payment(payment_id)
        payment.amount = payment.amount if amount is None else amount
        payment.currency = payment.currency if currency is None else currency
        payment.updated_at = self.clock()
        self._save(payment)
        return payment

    # --- settlement (the customer paying) ---------------------------------------------

    def begin_settlement(self, payment_id: str) -> Payment:
        """Claim a pending payment for settlement so a double submit cannot settle it twice."""
        payment = self.get_payment(payment_id)
        if payment.state != "pending" or payment.settling:
            raise GatewayError(409, "not_pending", payment)
        payment.settling = True
        return payment

    def complete_settlement(self, payment_id: str, outcome: Outcome) -> Payment:
        payment = self.get_payment(payment_id)
        payment.settling = False
        # It may have been cancelled or expired while a delayed settlement waited.
        if payment.state != "pending":
            raise GatewayError(409, "not_pending", payment)
        self._transition(payment, "paid" if outcome == "succeed" else "failed")
        return payment

    # --- refunds --------------------------------------------------------------------

    def refund(self, payment_id: str, key: str, amount: int) -> tuple[Refund, bool]:
        """Return (refund, created); a replay of the same request returns the original."""
        replayed = self._replay(("refund", key), (payment_id, amount))
        if replayed is not None:
            return self.refunds[replayed], False
        payment = self.get_payment(payment_id)
        if payment.state != "paid":
            raise GatewayError(409, "not_refundable", payment)
        if amount > payment.amount - payment.refunded_amount:
            raise GatewayError(409, "refund_exceeds_remaining", payment)
        refund = Refund(f"re_{self.make_hex()}", payment_id, amount, key, self.clock())
        # The refund is written before its payment; restore() settles a payment whose own
        # record was not written yet when the process died.
        self.records.put("refund", refund.id, refund.to_record())
        self.refunds[refund.id] = refund
        self.idempotency[("refund", key)] = IdempotencyRecord((payment_id, amount), refund.id)
        self._apply_refund(payment, refund)
        self._save(payment)
        return refund, True

    def _apply_refund(self, payment: Payment, refund: Refund) -> None:
        payment.refunded_amount += refund.amount
        payment.updated_at = refund.created_at
        if payment.refunded_amount == payment.amount:
            self._transition(payment, "refunded")

    def get_refund(self, refund_id: str) -> Refund:
        refund = self.refunds.get(refund_id)
        if refund is None:
            raise GatewayError(404, "not_found")
        return refund

    # --- events and housekeeping -------------------------------------------------------

    def drain_events(self) -> list[Event]:
        events, self._outbox = self._outbox, []
        return events

    def reset(self) -> None:
        self.payments.clear()
        self.refunds.clear()
        self.idempotency.clear()
        self._outbox.clear()
        self.faults.clear()
        self.records.clear()

    def _replay(self, scope: tuple[str, str], fingerprint: object) -> str | None:
        """The resource an earlier identical request made, or None for a fresh key.

        Only successful requests are recorded, so a refused request does not burn its key.
        """
        record = self.idempotency.get(scope)
        if record is None:
            return None
        if record.fingerprint != fingerprint:
            raise GatewayError(409, "idempotency_key_reused")
        return record.resource_id

    def _save(self, payment: Payment) -> None:
        self.records.put("payment", payment.id, payment.to_record())

    def _transition(self, payment: Payment, new_state: PaymentState) -> None:
        if new_state not in _ALLOWED.get(payment.state, frozenset()):
            raise GatewayError(409, "invalid_transition", payment)
        now = self.clock()
        payment.state = new_state
        payment.updated_at = now
        self._save(payment)
        self._outbox.append(
            Event(
                id=f"evt_{self.make_hex()}",
                created=int(now.timestamp()),
                payment_id=payment.id,
                reference=payment.params.reference,
                state=new_state,
            )
        )
