"""The operators' requests, checked at the edge like every other request (field by field,
before any value reaches a query); a bad one is `validation_error` naming the field."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from servicekit import validation
from servicekit.commands import identifier, state_filter
from servicekit.operations.hooks import StateQuery
from servicekit.refusals import InvalidRequest, NotFound, Refusal, invalid_fields_refused
from servicekit.schema import DISPATCHED, FAILED, OPEN, PENDING, RESOLVED

# Every refusal the operations service gives; its proto declares each reason (OpsRefusal).
REFUSALS: tuple[type[Refusal], ...] = (InvalidRequest, NotFound)
OUTBOX_STATES = (PENDING, DISPATCHED, FAILED)
INCIDENT_STATES = (OPEN, RESOLVED)
MAX_NOTE = 2000  # a reason or a note: room for a few sentences, not a document
DEFAULT_LIMIT, MAX_LIMIT = 200, 1000
MAX_STATE = 64  # a state's name

__all__ = ["INCIDENT_STATES", "OUTBOX_STATES", "REFUSALS", "identifier", "state_filter"]


@dataclass(frozen=True)
class ReplayEffect:
    effect_id: str
    operator: str
    reason: str

    def __post_init__(self) -> None:
        identifier("effect_id", self.effect_id)
        with invalid_fields_refused():
            validation.text("operator", self.operator)
            validation.text("reason", self.reason, MAX_NOTE, required=False)


@dataclass(frozen=True)
class ResolveIncident:
    incident_id: str
    operator: str
    decision: str
    note: str

    def __post_init__(self) -> None:
        identifier("incident_id", self.incident_id)
        with invalid_fields_refused():
            validation.text("operator", self.operator)
            validation.text("decision", self.decision)
            validation.text("note", self.note, MAX_NOTE, required=False)


def limit(value: int) -> int:
    """How many rows a listing returns: 1 to MAX_LIMIT, 0 for DEFAULT_LIMIT."""
    if value == 0:
        return DEFAULT_LIMIT
    with invalid_fields_refused():
        return validation.integer("limit", value, 1, MAX_LIMIT)


def audit_subject(value: str) -> str:
    """An audit log's subject to filter by (an effect or incident id, a delivery key), or
    empty for every subject."""
    with invalid_fields_refused():
        return validation.text("subject", value, required=False)


def state_query(
    booking_ids: Sequence[str], state: str, before: Timestamp | None, asked_limit: int
) -> StateQuery:
    """Bookings named by id (at most MAX_LIMIT), or a state to list by, checked field by
    field; `before` unset means now."""
    with invalid_fields_refused():
        if len(booking_ids) > MAX_LIMIT:
            raise validation.InvalidField("booking_ids", f"must be at most {MAX_LIMIT}")
        ids = tuple(validation.canonical_uuid("booking_ids", i) for i in booking_ids)
        state = validation.text("state", state, MAX_STATE, required=not ids)
        until = validation.moment("before", before) if before is not None else datetime.now(UTC)
    return StateQuery(ids, state, until, limit(asked_limit))
