"""Commands: what a caller asks the booking service to do, validated before any I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.booking.domain.errors import InvalidRequest
from services.booking.domain.idempotency import fingerprint
from services.booking.domain.model import Money, PaymentMode, TimeRange

_KEY = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
MAX_PARTY_SIZE = 4


def _require_key(key: str) -> None:
    if not _KEY.match(key):
        raise InvalidRequest("idempotency_key must be 1-128 characters of A-Z a-z 0-9 . _ : -")


def _require(**fields: str) -> None:
    for name, value in fields.items():
        if not value:
            raise InvalidRequest(f"{name} is required")


@dataclass(frozen=True)
class Checkout:
    org_id: str
    user: str
    idempotency_key: str
    slot_id: str
    party_size: int
    payment_mode: PaymentMode

    @classmethod
    def of(
        cls, org_id: str, user: str, key: str, slot_id: str, party_size: int, payment_mode: str
    ) -> Checkout:
        _require(org_id=org_id, user=user, slot_id=slot_id)
        _require_key(key)
        if not 1 <= party_size <= MAX_PARTY_SIZE:
            raise InvalidRequest(f"party_size must be 1 to {MAX_PARTY_SIZE}")
        if payment_mode not in PaymentMode.__members__.values():
            raise InvalidRequest("payment_mode must be card or pass")
        return cls(org_id, user, key, slot_id, party_size, PaymentMode(payment_mode))

    def fingerprint(self) -> bytes:
        return fingerprint(self.slot_id, self.org_id, self.user, self.party_size, self.payment_mode)


@dataclass(frozen=True)
class CancelBooking:
    org_id: str
    user: str
    idempotency_key: str
    booking_id: str

    def __post_init__(self) -> None:
        _require(org_id=self.org_id, booking_id=self.booking_id)
        _require_key(self.idempotency_key)

    def fingerprint(self) -> bytes:
        return fingerprint(self.booking_id, self.org_id, self.user)


@dataclass(frozen=True)
class RescheduleBooking:
    org_id: str
    user: str
    idempotency_key: str
    booking_id: str
    new_slot_id: str

    def __post_init__(self) -> None:
        _require(org_id=self.org_id, booking_id=self.booking_id, new_slot_id=self.new_slot_id)
        _require_key(self.idempotency_key)

    def fingerprint(self) -> bytes:
        return fingerprint(self.booking_id, self.new_slot_id, self.org_id, self.user)


@dataclass(frozen=True)
class CreateSpace:
    name: str
    timezone: str

    def __post_init__(self) -> None:
        _require(name=self.name, timezone=self.timezone)


@dataclass(frozen=True)
class NewSlot:
    during: TimeRange
    price: Money
