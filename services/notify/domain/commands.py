"""What callers ask the notify service, checked field by field before any I/O."""

from __future__ import annotations

from dataclasses import dataclass

from servicekit import validation
from servicekit.commands import identifier
from servicekit.refusals import InvalidRequest, invalid_fields_refused
from services.notify.domain.model import UNDECIDED, Decision

INCIDENT_STATES = ("open", "resolved")
UNDECIDED_STATES = tuple(state.value for state in UNDECIDED)


@dataclass(frozen=True)
class DeliveriesOf:
    """The deliveries of one booking or one order: exactly one of the two ids."""

    booking_id: str
    order_id: str

    def __post_init__(self) -> None:
        if bool(self.booking_id) == bool(self.order_id):
            raise InvalidRequest("exactly one of booking_id and order_id is required", "booking_id")
        if self.booking_id:
            identifier("booking_id", self.booking_id)
        else:
            identifier("order_id", self.order_id)


@dataclass(frozen=True)
class DecideDelivery:
    """An operator's decision on an unknown or failed delivery."""

    delivery_key: str
    decision: Decision
    operator: str
    note: str

    @classmethod
    def of(cls, delivery_key: str, decision: str, operator: str, note: str) -> DecideDelivery:
        identifier("delivery_key", delivery_key)
        with invalid_fields_refused():
            validation.one_of("decision", decision, Decision.__members__.values())
            validation.text("operator", operator)
            validation.text("note", note, required=False)
        return cls(delivery_key, Decision(decision), operator, note)
