"""Orders for entry passes and subscriptions, and the identity of an order command.

One Idempotency-Key names one purchase intent of one organisation. The fingerprint is
taken over the normalised values of every field that changes that intent, never over the
raw request bytes: key order and white space do not change a purchase, a plan version does.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from services.payment.domain.errors import InvalidIdempotencyKey, InvalidPlan
from services.payment.domain.money import Money

PASS: Final = "pass"
SUBSCRIPTION: Final = "subscription"
KINDS: Final = (PASS, SUBSCRIPTION)

ORDER_PENDING: Final = "pending"
ORDER_PAID: Final = "paid"
ORDER_CANCELLED: Final = "cancelled"
ORDER_FAILED: Final = "failed"

_KEY = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_CURRENCY = re.compile(r"^[A-Z]{3}$")


@dataclass(frozen=True)
class Plan:
    """One immutable version of a catalogue plan."""

    code: str
    version: int
    kind: str
    name: str
    price: Money
    entries: int
    period_days: int

    def validated(self) -> Plan:
        code = normalise_plan_code(self.code)
        problems = [
            "plan_code" if not code else "",
            "plan_version" if self.version < 1 else "",
            "kind" if self.kind not in KINDS else "",
            "price" if self.price.amount <= 0 or not _CURRENCY.match(self.price.currency) else "",
            "entries" if self.kind == PASS and self.entries < 1 else "",
            "period_days" if self.kind == SUBSCRIPTION and self.period_days < 1 else "",
        ]
        if any(problems):
            raise InvalidPlan(", ".join(p for p in problems if p))
        return Plan(
            code, self.version, self.kind, self.name, self.price, self.entries, self.period_days
        )


@dataclass(frozen=True)
class CreateOrder:
    """The command: an organisation asks to buy one plan version under an Idempotency-Key."""

    org_id: str
    user: str
    idempotency_key: str
    plan_code: str
    plan_version: int

    def fingerprint(self) -> str:
        return order_fingerprint(self.plan_code, self.plan_version)


@dataclass(frozen=True)
class Order:
    order_id: uuid.UUID
    org_id: str
    state: str
    plan_code: str
    plan_version: int
    kind: str
    price: Money
    entries: int
    period_days: int
    created_at: datetime | None = None


def normalise_plan_code(code: str) -> str:
    # The catalogue stores codes in lower case, so "Team" and "team" are one plan.
    return code.strip().lower()


def order_fingerprint(plan_code: str, plan_version: int) -> str:
    """SHA-256 over the canonical form of every field that changes the purchase intent.

    A new intent-changing field must be added here, or a changed request would be taken
    for a replay.
    """
    canonical = json.dumps(
        {"plan_code": normalise_plan_code(plan_code), "plan_version": int(plan_version)},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def check_idempotency_key(key: str) -> str:
    if not _KEY.match(key):
        raise InvalidIdempotencyKey("1 to 128 characters from A-Z a-z 0-9 . _ : -")
    return key


def order_state_after_payment(payment_state: str) -> str | None:
    """The order follows its payment; refunds of an order are not modelled yet."""
    return {
        "paid": ORDER_PAID,
        "failed": ORDER_FAILED,
        "expired": ORDER_CANCELLED,
        "cancelled": ORDER_CANCELLED,
    }.get(payment_state)
