"""The operators' view at the payment service: a booking's payment and the trace that came
with its request, incidents resolved one by one with an audit, and stuck payments."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import grpc
from google.protobuf import timestamp_pb2
from liftfit.booking.v1 import events_pb2 as booking
from liftfit.ops.v1 import operations_pb2 as pb
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import text

from servicekit import envelope
from servicekit.incidents import Incidents
from tests.operations.operator import (
    audit_rows,
    new_id,
    new_trace_id,
    operations,
    refused,
    traceparent,
    written_by,
)
from tests.payment.harness import Harness


async def _requested_with_trace(harness: Harness, trace_id: str) -> str:
    """A card checkout's PaymentRequested, sent as booking's relay sends it inside a trace."""
    booking_id = new_id()
    hold = timestamp_pb2.Timestamp()
    hold.FromDatetime(datetime.now(UTC) + timedelta(minutes=15))
    event = booking.PaymentRequested(
        booking_id=booking_id,
        org_id=new_id(),
        user="anna",
        price=booking.Money(amount=45000, currency="CZK"),
        slot_id=new_id(),
        hold_expires_at=hold,
    )
    wrapped = envelope.wrap(event, booking_id, "booking", {}, uuid.uuid4())
    headers = [
        ("event-id", wrapped.event_id.encode()),
        ("traceparent", traceparent(trace_id).encode()),
    ]
    await harness.producer.send_and_wait(
        f"{harness.prefix}booking.events",
        wrapped.SerializeToString(),
        key=booking_id.encode(),
        headers=headers,
    )
    return booking_id


async def _sql(harness: Harness, statement: str, **values: str) -> None:
    async with harness.app.sessions() as session, session.begin():
        await session.execute(text(statement), values)


async def test_describe_booking_shows_its_payment_ids_and_the_trace_its_request_came_in(
    harness: Harness, span_exporter: InMemorySpanExporter
) -> None:
    trace_id = new_trace_id()
    booking_id = await _requested_with_trace(harness, trace_id)
    payment = await harness.payment_when(booking_id, lambda p: bool(p.checkout_url))
    side = await operations(harness.channel).DescribeBooking(
        pb.DescribeBookingRequest(booking_id=booking_id)
    )
    assert (side.service, side.known, side.state) == ("payment", True, "pending")
    assert side.facts["payment_id"] == payment.payment_id
    assert side.facts["provider_payment_id"] == payment.provider_payment_id
    assert side.facts["amount"] == "45000 CZK"
    assert list(side.subjects) == [booking_id, payment.payment_id, payment.provider_payment_id]
    assert side.trace_id == trace_id


async def test_an_incident_is_resolved_by_its_id_once_with_one_audit_row(
    harness: Harness,
) -> None:
    payment = await harness.opened_payment()
    incidents = Incidents(harness.app.tables.eventing.incidents)
    async with harness.app.sessions() as session, session.begin():
        await incidents.open(session, "refund_failed", payment.payment_id, "never confirmed")
        await incidents.open(
            session, "timer_failed", f"cancel_at_gateway:{payment.payment_id}", "kept raising"
        )
    ops = operations(harness.channel)
    side = await ops.DescribeBooking(pb.DescribeBookingRequest(booking_id=payment.booking_id))
    assert sorted((i.kind, i.service) for i in side.open_incidents) == [
        ("refund_failed", "payment"),
        ("timer_failed", "payment"),
    ]
    [target] = [i for i in side.open_incidents if i.kind == "refund_failed"]

    request = pb.ResolveIncidentRequest(
        incident_id=target.incident_id,
        operator="ops-anna",
        decision="refunded by hand",
        note="checked at the gateway",
    )
    resolved = await ops.ResolveIncident(request)
    assert (resolved.state, resolved.resolved_by, resolved.decision, resolved.note) == (
        "resolved",
        "ops-anna",
        "refunded by hand",
        "checked at the gateway",
    )
    assert resolved.HasField("resolved_at") and resolved.service == "payment"
    sessions, tables = harness.app.sessions, harness.app.tables.eventing
    [audited] = await audit_rows(sessions, tables, target.incident_id)
    assert (audited.actor, audited.action) == ("ops-anna", "resolve_incident")
    assert audited.detail["decision"] == "refunded by hand"
    async with sessions() as session:
        resolution = await written_by(session, "incidents", "incident_id", target.incident_id)
    assert audited.written_by == resolution  # one transaction: the resolution and its audit

    again = await ops.ResolveIncident(
        pb.ResolveIncidentRequest(
            incident_id=target.incident_id, operator="ops-ben", decision="something else"
        )
    )
    assert again == resolved  # answered unchanged
    assert len(await audit_rows(sessions, tables, target.incident_id)) == 1
    side = await ops.DescribeBooking(pb.DescribeBookingRequest(booking_id=payment.booking_id))
    assert [i.kind for i in side.open_incidents] == ["timer_failed"]
    listed = await ops.ListIncidents(pb.ListIncidentsRequest(state="resolved"))
    assert [i.incident_id for i in listed.incidents] == [target.incident_id]

    unknown = pb.ResolveIncidentRequest(incident_id=new_id(), operator="ops-anna", decision="x")
    answer = await refused(ops.ResolveIncident(unknown))
    assert (answer.code, answer.reason, answer.domain) == (
        grpc.StatusCode.NOT_FOUND,
        "not_found",
        "liftfit.ops",
    )


async def test_drift_findings_name_payments_pending_past_their_hold_and_failed_refunds(
    harness: Harness,
) -> None:
    late = await harness.opened_payment()
    unrefunded = await harness.opened_payment()
    await _sql(
        harness,
        "UPDATE payments SET hold_expires_at = now() - interval '20 minutes'"
        " WHERE payment_id = :id",
        id=late.payment_id,
    )
    await _sql(
        harness,
        "UPDATE payments SET state = 'refund_failed' WHERE payment_id = :id",
        id=unrefunded.payment_id,
    )
    found = (
        await operations(harness.channel).ListDriftFindings(pb.ListDriftFindingsRequest())
    ).findings
    assert sorted((f.kind, f.subject_id) for f in found) == sorted(
        [("pending_past_hold", late.payment_id), ("refund_failed", unrefunded.payment_id)]
    )
    for finding in found:
        assert (finding.service, finding.state, finding.needs_human) == ("payment", "open", True)
        assert finding.problem and finding.truth and finding.repair
