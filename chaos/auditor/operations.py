"""Every failed row and every incident says in words what went wrong, and no work waits
longer than the bound once it was due: an outbox row unsent, a timer unfired, a hold not
released, a refund or a revocation unconfirmed, a mail half sent."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from chaos.auditor.findings import Findings
from chaos.auditor.snapshots import Stores
from servicekit.schema import FAILED, PENDING

EXPLAINED = "failed_rows_and_incidents_explained"
NOT_OVERDUE = "no_pending_work_older_than_the_bound"


@dataclass(frozen=True)
class Failure:
    store: str
    ids: dict[str, str]
    state: str
    why: str  # the row's own words, or an incident's


@dataclass(frozen=True)
class Waiting:
    store: str
    ids: dict[str, str]
    state: str
    due: datetime


def check_operations(stores: Stores) -> Findings:
    findings = Findings()
    for failure in _failures(stores):
        findings.check(
            EXPLAINED,
            bool(failure.why.strip()),
            failure.ids,
            **{failure.store: f"{failure.state} with no words saying why"},
        )
    for waiting in _waiting(stores):
        findings.check(
            NOT_OVERDUE,
            not stores.settled(waiting.due),
            waiting.ids,
            **{
                waiting.store: f"{waiting.state} since {waiting.due.isoformat()}, "
                f"audited at {stores.now.isoformat()}"
            },
        )
    return findings


def _incident_words(stores: Stores, *subjects: str | None) -> str:
    return " ".join(i.detail for s in subjects if s for i in stores.incidents_about(s))


def _failures(stores: Stores) -> Iterator[Failure]:
    for row in stores.work:
        if row.state == FAILED:
            ids = {"row_id": row.row_id, "kind": row.kind}
            yield Failure(f"{row.service}.{row.table}", ids, row.state, row.last_error)
    for incident in stores.incidents:
        ids = {"incident_id": incident.incident_id, "subject_id": incident.subject_id}
        yield Failure(
            f"{incident.service}.incidents", ids, f"{incident.kind} incident", incident.detail
        )
    for delivery in stores.deliveries:
        if delivery.state == "failed":
            why = delivery.last_error + _incident_words(stores, delivery.delivery_key)
            yield Failure(
                "notify.deliveries", {"delivery_key": delivery.delivery_key}, "failed", why
            )
    for grant in stores.grants:
        if grant.state == "failed":
            why = (grant.failure or "") + _incident_words(stores, grant.grant_id, grant.booking_id)
            ids = {"grant_id": grant.grant_id, "booking_id": grant.booking_id}
            yield Failure("access.grants", ids, "failed", why)
    for payment in stores.payments:
        if payment.state == "refund_failed":
            why = _incident_words(stores, payment.payment_id)
            yield Failure(
                "payment.payments", {"payment_id": payment.payment_id}, payment.state, why
            )


def _waiting(stores: Stores) -> Iterator[Waiting]:
    for row in stores.work:
        if row.state == PENDING:
            ids = {"row_id": row.row_id, "kind": row.kind}
            yield Waiting(f"{row.service}.{row.table}", ids, "pending", row.since)
    for booking in stores.bookings:
        if booking.state == "pending" and booking.hold_expires_at is not None:
            ids = {"booking_id": booking.booking_id}
            yield Waiting("booking.bookings", ids, "pending, hold run out", booking.hold_expires_at)
    for slot in stores.slots:
        if slot.state == "closed" and slot.closed_reason == "awaiting_revocation":
            yield Waiting(
                "booking.slots", {"slot_id": slot.slot_id}, "awaiting_revocation", slot.updated_at
            )
    for payment in stores.payments:
        if payment.state == "refund_pending":
            ids = {"payment_id": payment.payment_id}
            yield Waiting("payment.payments", ids, payment.state, payment.updated_at)
    for grant in stores.grants:
        if grant.state == "revoke_pending":
            ids = {"grant_id": grant.grant_id, "booking_id": grant.booking_id}
            yield Waiting("access.grants", ids, grant.state, grant.updated_at)
    for delivery in stores.deliveries:
        if delivery.state == "sending":
            ids = {"delivery_key": delivery.delivery_key}
            yield Waiting("notify.deliveries", ids, delivery.state, delivery.updated_at)
