"""What every idempotent customer command carries, and the fields every service's requests
name (an id, a list's state filter), checked once for every service."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from servicekit import validation
from servicekit.refusals import InvalidIdempotencyKey, invalid_fields_refused


@dataclass(frozen=True)
class IdempotentCommand:
    """A customer's command: the organisation (a canonical UUID), the user and the
    Idempotency-Key, checked in the order a caller reads them when the command is made.
    A service's command adds its own fields and checks them in its own __post_init__."""

    org_id: str
    user: str
    idempotency_key: str

    def __post_init__(self) -> None:
        with invalid_fields_refused():
            validation.canonical_uuid("org_id", self.org_id)
            validation.text("user", self.user)
        with invalid_fields_refused(InvalidIdempotencyKey):
            validation.idempotency_key("idempotency_key", self.idempotency_key)


def identifier(field: str, value: str) -> str:
    """An id a caller names: a canonical UUID, or InvalidRequest naming the field."""
    with invalid_fields_refused():
        return validation.canonical_uuid(field, value)


def state_filter(value: str, known: Collection[str]) -> str:
    """A list's filter: a known state, or empty for every state."""
    if not value:
        return value
    with invalid_fields_refused():
        return validation.one_of("state", value, known)
