"""Domain errors: values the entry points map once to gRPC status codes and reasons."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar

from servicekit.validation import InvalidField


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
    """A malformed request; `field` names the bad field when one is to blame."""

    reason = "validation_error"

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field


@contextmanager
def invalid_fields_refused() -> Iterator[None]:
    """Turns servicekit's `InvalidField` into this service's `InvalidRequest`."""
    try:
        yield
    except InvalidField as error:
        raise InvalidRequest(error.problem, error.field) from None
