"""What callers ask the access service, checked field by field before any I/O."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from servicekit import validation
from servicekit.commands import identifier
from servicekit.refusals import invalid_fields_refused


class Purpose(StrEnum):
    CUSTOMER_VIEW = "customer_view"  # the customer reads it (the gateway's GET .../access)
    ACCESS_EMAIL = "access_email"  # the notify service puts it into the access e-mail


FINDING_STATES = ("repaired", "open", "cleared")
INCIDENT_STATES = ("open", "resolved")


@dataclass(frozen=True)
class AccessQuery:
    org_id: str
    booking_id: str

    def __post_init__(self) -> None:
        identifier("booking_id", self.booking_id)
        identifier("org_id", self.org_id)


@dataclass(frozen=True)
class DisclosePin(AccessQuery):
    """A read of the PIN: who reads it and why are recorded with the disclosure."""

    reader: str
    purpose: Purpose

    @classmethod
    def of(cls, org_id: str, booking_id: str, reader: str, purpose: str) -> DisclosePin:
        with invalid_fields_refused():
            validation.one_of("purpose", purpose, Purpose.__members__.values())
        return cls(org_id, booking_id, reader, Purpose(purpose))

    def __post_init__(self) -> None:
        super().__post_init__()
        with invalid_fields_refused():
            validation.text("user", self.reader)
