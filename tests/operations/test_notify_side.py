"""The operators' view at the notify service: a booking's mails as it holds them, and the
deliveries that wait for an operator's decision."""

from __future__ import annotations

from liftfit.ops.v1 import operations_pb2 as pb
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import text

from tests.notify.harness import NotifyHarness, a_booking, confirmed
from tests.operations.operator import new_trace_id, operations, traceparent


async def test_describe_booking_summarises_its_deliveries_and_shows_the_booking_trace(
    notify: NotifyHarness, span_exporter: InMemorySpanExporter
) -> None:
    booking, trace_id = a_booking("en"), new_trace_id()
    payload = notify.record("booking.events", booking.booking_id, confirmed(booking))
    await notify.producer.send_and_wait(
        f"{notify.prefix}booking.events",
        payload,
        key=booking.booking_id.encode(),
        headers=[("traceparent", traceparent(trace_id).encode())],
    )
    [mail] = await notify.deliveries_when(booking.booking_id, 1, "sent")

    side = await operations(notify.channel).DescribeBooking(
        pb.DescribeBookingRequest(booking_id=booking.booking_id)
    )
    assert (side.service, side.known, side.state) == ("notify", True, "sent 1")
    assert dict(side.facts) == {f"delivery:{mail.delivery_key}": "booking_confirmed sent"}
    assert list(side.subjects) == [booking.booking_id, mail.delivery_key]
    assert side.trace_id == trace_id
    assert list(side.failed_effects) == [] and list(side.open_incidents) == []


async def test_drift_findings_name_the_deliveries_whose_outcome_is_unknown(
    notify: NotifyHarness,
) -> None:
    booking = a_booking()
    await notify.publish("booking.events", booking.booking_id, confirmed(booking))
    [mail] = await notify.deliveries_when(booking.booking_id, 1, "sent")
    async with notify.app.deps.uows.transaction() as uow:
        await uow.session.execute(
            text("UPDATE deliveries SET state = 'unknown' WHERE delivery_key = :key"),
            {"key": mail.delivery_key},
        )
    ops = operations(notify.channel)
    [finding] = (await ops.ListDriftFindings(pb.ListDriftFindingsRequest())).findings
    assert (finding.service, finding.kind, finding.subject_id) == (
        "notify",
        "delivery_outcome_unknown",
        mail.delivery_key,
    )
    assert finding.needs_human and finding.state == "open" and "DecideDelivery" in finding.repair
    side = await ops.DescribeBooking(pb.DescribeBookingRequest(booking_id=booking.booking_id))
    assert side.state == "unknown 1"
