"""Orders for entry passes and subscriptions, and the identity of an order command.

One Idempotency-Key names one purchase intent of one organisation. The fingerprint is
taken over the normalised values of every field that changes that intent, never over the
raw request bytes: key order and white space do not change a purchase, a plan version does.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from servicekit import validation
from servicekit.commands import IdempotentCommand
from servicekit.contacts import NO_CONTACT, Contact
from servicekit.idempotency import fingerprint
from servicekit.refusals import (
    InvalidIdempotencyKey,
    InvalidRequest,
    invalid_fields_refused,
)
from services.payment.domain.errors import InvalidPlan
from services.payment.domain.money import Money

PASS: Final = "pass"
SUBSCRIPTION: Final = "subscription"
KINDS: Final = (PASS, SUBSCRIPTION)

ORDER_PENDING: Final = "pending"
ORDER_PAID: Final = "paid"
ORDER_CANCELLED: Final = "cancelled"
ORDER_FAILED: Final = "failed"

# A catalogue code once normalised (trimmed, lower case): "pass-10", "team.yearly".
PLAN_CODE = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
# As a caller may write it: in any case, with spaces around it. Checked before lowering, so
# no other character lowers into the code (the Kelvin sign would become a "k").
PLAN_CODE_AS_WRITTEN = re.compile(r" *[A-Za-z0-9][A-Za-z0-9._-]{0,63} *")
MAX_PLAN_CODE_AS_WRITTEN = 100
MAX_PLAN_VERSION = 9_999
MAX_ENTRIES = 1_000  # entries a pass may add at once
MAX_PERIOD_DAYS = 366  # a subscription is paid at least once a year


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
        """The plan with its code normalised; InvalidPlan naming the first bad field."""
        code = plan_code(self.code, as_error=InvalidPlan)
        with invalid_fields_refused(InvalidPlan):
            validation.integer("plan_version", self.version, 1, MAX_PLAN_VERSION)
            validation.one_of("kind", self.kind, KINDS)
            validation.text("name", self.name)
            validation.amount("price.amount", self.price.amount)
            validation.currency("price.currency", self.price.currency)
            least_entries = 1 if self.kind == PASS else 0
            validation.integer("entries", self.entries, least_entries, MAX_ENTRIES)
            least_days = 1 if self.kind == SUBSCRIPTION else 0
            validation.integer("period_days", self.period_days, least_days, MAX_PERIOD_DAYS)
        return Plan(
            code, self.version, self.kind, self.name, self.price, self.entries, self.period_days
        )


@dataclass(frozen=True)
class CreateOrder(IdempotentCommand):
    """The command: an organisation asks to buy one plan version under an Idempotency-Key.

    Every field is checked when the command is made, before any I/O."""

    plan_code: str
    plan_version: int
    # Not in the fingerprint: where the mails go does not make it another order.
    contact: Contact = NO_CONTACT

    def __post_init__(self) -> None:
        super().__post_init__()
        plan_code(self.plan_code)
        with invalid_fields_refused():
            validation.integer("plan_version", self.plan_version, 1, MAX_PLAN_VERSION)

    def fingerprint(self) -> bytes:
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


def plan_code(code: str, as_error: type[InvalidRequest] = InvalidRequest) -> str:
    """A caller's plan code, normalised; it must then be 1-64 of a-z 0-9 . _ - ."""
    with invalid_fields_refused(as_error):
        validation.text("plan_code", code, max_length=MAX_PLAN_CODE_AS_WRITTEN)
        validation.matching("plan_code", code, PLAN_CODE_AS_WRITTEN, "1 to 64 of a-z 0-9 . _ -")
        return validation.matching(
            "plan_code", normalise_plan_code(code), PLAN_CODE, "1 to 64 of a-z 0-9 . _ -"
        )


def order_fingerprint(plan_code: str, plan_version: int) -> bytes:
    """SHA-256 over the canonical form of every field that changes the purchase intent.

    A new intent-changing field must be added here, or a changed request would be taken
    for a replay.
    """
    return fingerprint(plan_code=normalise_plan_code(plan_code), plan_version=int(plan_version))


def check_idempotency_key(key: str) -> str:
    with invalid_fields_refused(InvalidIdempotencyKey):
        return validation.idempotency_key("idempotency_key", key)


def order_state_after_payment(payment_state: str) -> str | None:
    """The order follows its payment; refunds of an order are not modelled yet."""
    return {
        "paid": ORDER_PAID,
        "failed": ORDER_FAILED,
        "expired": ORDER_CANCELLED,
        "cancelled": ORDER_CANCELLED,
    }.get(payment_state)
