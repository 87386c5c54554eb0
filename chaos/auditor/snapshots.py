"""Plain snapshots of what every store holds, as the checks read them.

One frozen dataclass per kind of record, with only the fields a check needs; `Stores` holds
them all with the moment they were read and the rules of the audit. The checks are pure
functions of a `Stores`, so a test builds one by hand.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from chaos.auditor.findings import Violation

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Rules:
    bound: timedelta = timedelta(seconds=120)  # how old pending work may be once settled
    activation_lead: timedelta = timedelta(seconds=900)  # ACCESS_ACTIVATION_LEAD_SECONDS
    alias_prefix: str = "liftfit"  # ACCESS_ALIAS_PREFIX


# --- booking ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Slot:
    slot_id: str
    state: str
    holder_booking_id: str | None = None
    closed_reason: str | None = None
    updated_at: datetime = EPOCH


@dataclass(frozen=True)
class Booking:
    booking_id: str
    org_id: str
    slot_id: str
    state: str
    payment_mode: str = "card"
    price_amount: int = 0
    currency: str = "CZK"
    valid_from: datetime = EPOCH
    valid_to: datetime = EPOCH
    payment_id: str | None = None
    hold_expires_at: datetime | None = None
    moves: int = 0
    updated_at: datetime = EPOCH


@dataclass(frozen=True)
class LedgerEntry:
    entry_id: int
    org_id: str
    delta: int
    reason: str
    reference: str


@dataclass(frozen=True)
class PassBalance:
    org_id: str
    balance: int


# --- payment ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Payment:
    payment_id: str
    state: str
    amount: int
    currency: str
    booking_id: str | None = None
    order_id: str | None = None
    provider_payment_id: str | None = None
    updated_at: datetime = EPOCH


@dataclass(frozen=True)
class Order:
    order_id: str
    org_id: str
    state: str
    kind: str
    amount: int
    currency: str
    entries: int
    updated_at: datetime = EPOCH


# --- access -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Grant:
    grant_id: str
    booking_id: str
    slot_id: str
    device_id: str
    valid_from: datetime
    valid_to: datetime
    state: str
    provision_id: str
    failure: str | None = None
    updated_at: datetime = EPOCH


@dataclass(frozen=True)
class Provision:
    provision_id: str
    grant_id: str
    state: str
    provider_code_id: str | None = None
    updated_at: datetime = EPOCH


@dataclass(frozen=True)
class Disclosure:
    grant_id: str
    booking_id: str
    purpose: str


# --- notify -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Delivery:
    delivery_key: str
    source: str
    template: str
    state: str
    last_error: str = ""
    booking_id: str | None = None
    updated_at: datetime = EPOCH


# --- every service's eventing tables ---------------------------------------------------------


@dataclass(frozen=True)
class WorkRow:
    """An outbox, inbox or timer row: `since` is when it became due (or was written)."""

    service: str
    table: str
    row_id: str
    kind: str
    state: str
    since: datetime
    last_error: str = ""


@dataclass(frozen=True)
class Incident:
    service: str
    incident_id: str
    kind: str
    subject_id: str
    state: str
    detail: str
    decision: str = ""


# --- the sandboxes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Charge:
    """A payment at the card gateway; money was taken when it is paid or refunded."""

    charge_id: str
    reference: str
    state: str
    amount: int
    currency: str
    refunded_amount: int = 0


@dataclass(frozen=True)
class Refund:
    refund_id: str
    charge_id: str
    amount: int
    idempotency_key: str


@dataclass(frozen=True)
class LockCode:
    code_id: str
    device_id: str
    name: str
    pin: str
    starts_at: datetime
    ends_at: datetime
    status: str


@dataclass(frozen=True)
class DoorTry:
    device_id: str
    pin: str
    at: datetime  # the moment the PIN was tried for
    wall: datetime  # the real time of the try
    code_id: str | None  # the code that opened the door; None: it stayed shut


@dataclass
class Stores:
    now: datetime
    rules: Rules = field(default_factory=Rules)
    slots: list[Slot] = field(default_factory=list)
    bookings: list[Booking] = field(default_factory=list)
    ledger: list[LedgerEntry] = field(default_factory=list)
    balances: list[PassBalance] = field(default_factory=list)
    payments: list[Payment] = field(default_factory=list)
    orders: list[Order] = field(default_factory=list)
    grants: list[Grant] = field(default_factory=list)
    provisions: list[Provision] = field(default_factory=list)
    disclosures: list[Disclosure] = field(default_factory=list)
    deliveries: list[Delivery] = field(default_factory=list)
    work: list[WorkRow] = field(default_factory=list)
    incidents: list[Incident] = field(default_factory=list)
    orgs: set[str] = field(default_factory=set)
    charges: list[Charge] = field(default_factory=list)
    refunds: list[Refund] = field(default_factory=list)
    codes: list[LockCode] = field(default_factory=list)
    door_log: list[DoorTry] = field(default_factory=list)
    # Copies the mail server took of each delivery's Message-ID (None: it cannot tell).
    mail_copies: dict[str, int | None] = field(default_factory=dict)
    # Message-IDs of the platform's mails among the messages the mail server keeps.
    mail_message_ids: Counter[str] = field(default_factory=Counter)
    # Records of a store that could not be read, reported as they are.
    unreadable: list[Violation] = field(default_factory=list)

    def settled(self, since: datetime) -> bool:
        """Whether a change made at `since` has had the bound to take its effects."""
        return since + self.rules.bound <= self.now

    def incidents_about(self, subject_id: str) -> list[Incident]:
        return [i for i in self.incidents if i.subject_id == subject_id]
