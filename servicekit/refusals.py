"""Refusals: what a service tells a caller it will not do, and of which kind.

A refusal is a value of the domain (pure: no gRPC here), with the contract's
machine-readable `reason` and a `kind`. `servicekit.errors` turns the kind into one status
code, the same in every service. The few refusals every service shares (a malformed
request, an unknown id, a reused idempotency key) are defined once here; each service
defines its own beside them, subclassing `Refusal`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import ClassVar

from servicekit import validation
from servicekit.validation import InvalidField


class Kind(StrEnum):
    INVALID = "invalid"  # the request itself is malformed
    NOT_FOUND = "not_found"
    # What the request would create, or its idempotency key, already names something else.
    ALREADY_EXISTS = "already_exists"
    PRECONDITION = "precondition"  # well formed, but the current state refuses it
    UNAVAILABLE = "unavailable"  # a provider did not answer; the caller may try again


class Refusal(Exception):
    """Base of every error a caller can be told about."""

    reason: ClassVar[str] = "refused"
    kind: ClassVar[Kind] = Kind.PRECONDITION

    @property
    def metadata(self) -> dict[str, str]:
        """What the caller may need beside the reason (an existing id, a field)."""
        return {}


class InvalidRequest(Refusal):
    """A malformed request; `field` names the bad field when one is to blame."""

    reason = "validation_error"
    kind = Kind.INVALID

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field

    @property
    def metadata(self) -> dict[str, str]:
        return {"field": self.field} if self.field else {}


class InvalidIdempotencyKey(InvalidRequest):
    reason = "invalid_idempotency_key"


class NotFound(Refusal):
    """No such resource, or one the caller may not know exists."""

    reason = "not_found"
    kind = Kind.NOT_FOUND


class IdempotencyConflict(Refusal):
    """The key was used before for a different request; the original is untouched."""

    reason = "idempotency_conflict"
    kind = Kind.ALREADY_EXISTS


@contextmanager
def invalid_fields_refused(as_error: type[InvalidRequest] = InvalidRequest) -> Iterator[None]:
    """Turns servicekit's `InvalidField` into an `InvalidRequest` (or a subclass)."""
    try:
        yield
    except InvalidField as error:
        raise as_error(error.problem, error.field) from None


def check_caller(org_id: str, user: str, key: str) -> None:
    """The fields every idempotent customer command carries, in the order a caller reads
    them: the organisation (a canonical UUID), the user, the Idempotency-Key."""
    with invalid_fields_refused():
        validation.canonical_uuid("org_id", org_id)
        validation.text("user", user)
    with invalid_fields_refused(InvalidIdempotencyKey):
        validation.idempotency_key("idempotency_key", key)
