"""What every idempotent customer command carries, checked once for every service."""

from __future__ import annotations

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
