"""Domain errors: values the service layer raises and the entrypoints map once to statuses."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from servicekit.validation import InvalidField


class PaymentDomainError(Exception):
    """Base of every error a caller can be told about; `reason` is the contract's code."""

    reason = "domain_error"


class IdempotencyConflict(PaymentDomainError):
    """The key was used before for a different request; the original is untouched."""

    reason = "idempotency_conflict"


class InvalidRequest(PaymentDomainError):
    """A malformed request; `field` names the bad field when one is to blame."""

    reason = "validation_error"

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field


@contextmanager
def invalid_fields_refused(as_error: type[InvalidRequest] = InvalidRequest) -> Iterator[None]:
    """Turns servicekit's `InvalidField` into this service's `InvalidRequest` (or a subclass)."""
    try:
        yield
    except InvalidField as error:
        raise as_error(error.problem, error.field) from None


class InvalidIdempotencyKey(InvalidRequest):
    reason = "invalid_idempotency_key"


class UnknownPlan(PaymentDomainError):
    reason = "unknown_plan"


class PlanVersionExists(PaymentDomainError):
    """A plan version is immutable: it may be created once and never changed."""

    reason = "plan_version_exists"


class InvalidPlan(InvalidRequest):
    reason = "validation_error"


class OrderExists(PaymentDomainError):
    """The organisation already has an open initial subscription order or an active period."""

    reason = "order_exists"

    def __init__(self, existing_order_id: str) -> None:
        super().__init__(f"order {existing_order_id} is open or its period is active")
        self.existing_order_id = existing_order_id


class InvalidSignature(PaymentDomainError):
    """A notification whose signature, timestamp or body does not verify."""

    reason = "invalid_signature"


class NotFound(PaymentDomainError):
    reason = "not_found"


class AmountMismatch(PaymentDomainError):
    """The gateway reports another amount or currency than the local snapshot."""

    reason = "amount_mismatch"
