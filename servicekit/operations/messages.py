"""The operations service's messages from servicekit's values."""

from __future__ import annotations

import json
from typing import Any

from liftfit.ops.v1 import operations_pb2 as pb

from servicekit import protobuf
from servicekit.audit import AuditEntry
from servicekit.incidents import Incident
from servicekit.operations.effects import Effect
from servicekit.operations.hooks import BookingState, DriftFinding
from servicekit.outbox import Backlog
from servicekit.protobuf import timestamp
from servicekit.schema import DISPATCHED, FAILED, PENDING


def effect_message(effect: Effect) -> pb.Effect:
    return pb.Effect(
        source=effect.source,
        effect_id=str(effect.effect_id),
        name=effect.name,
        subject=effect.subject,
        state=effect.state,
        attempts=effect.attempts,
        dispatch_generation=effect.dispatch_generation,
        last_error=effect.last_error or "",
        due_at=timestamp(effect.due_at),
        created_at=timestamp(effect.created_at),
    )


def incident_message(service: str, incident: Incident) -> pb.Incident:
    found = protobuf.incident(pb.Incident, incident)
    found.service = service
    return found


def outbox_message(row: Any) -> pb.OutboxRow:
    return pb.OutboxRow(
        effect_id=str(row.effect_id),
        topic=row.topic,
        key=row.key,
        event_type=row.event_type,
        state=row.state,
        attempts=row.attempts,
        dispatch_generation=row.dispatch_generation,
        last_error=row.last_error or "",
        created_at=timestamp(row.created_at),
        dispatched_at=timestamp(row.dispatched_at),
    )


def finding_message(service: str, finding: DriftFinding) -> pb.DriftFinding:
    return pb.DriftFinding(
        finding_id=finding.finding_id,
        service=service,
        kind=finding.kind,
        subject_id=finding.subject_id,
        problem=finding.problem,
        truth=finding.truth,
        repair=finding.repair,
        needs_human=finding.needs_human,
        state=finding.state,
        found_at=timestamp(finding.found_at),
        cleared_at=timestamp(finding.cleared_at),
    )


def backlog_message(backlog: Backlog) -> pb.Backlog:
    return pb.Backlog(
        pending=backlog.counts.get(PENDING, 0),
        dispatched=backlog.counts.get(DISPATCHED, 0),
        failed=backlog.counts.get(FAILED, 0),
        oldest_pending_at=timestamp(backlog.oldest_pending_at),
    )


def audit_message(entry: AuditEntry) -> pb.AuditEntry:
    return pb.AuditEntry(
        audit_id=entry.audit_id,
        at=timestamp(entry.at),
        actor=entry.actor,
        action=entry.action,
        subject=entry.subject,
        detail_json=json.dumps(entry.detail, sort_keys=True, ensure_ascii=False),
    )


def booking_state_message(found: BookingState) -> pb.BookingState:
    return pb.BookingState(
        booking_id=found.booking_id, state=found.state, since=timestamp(found.since)
    )
