"""Domain errors: values the entry points map once to gRPC status codes and reasons."""

from __future__ import annotations

from typing import ClassVar


class DomainError(Exception):
    """A request the domain refuses; `reason` is the machine-readable code of the contract."""

    reason: ClassVar[str] = "domain_error"


class SlotUnavailable(DomainError):
    reason = "slot_unavailable"


class IdempotencyConflict(DomainError):
    reason = "idempotency_conflict"


class InsufficientPassBalance(DomainError):
    reason = "insufficient_pass_balance"


class BookingNotCancellable(DomainError):
    reason = "booking_not_cancellable"


class BookingNotReschedulable(DomainError):
    reason = "booking_not_reschedulable"


class NotFound(DomainError):
    reason = "not_found"


class InvalidRequest(DomainError):
    reason = "validation_error"
