"""The operators' view at the access service: a booking's grant as it holds it (never its
PIN), and the drift check's findings as they are stored."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from itertools import count
from typing import TYPE_CHECKING

import pytest
from liftfit.booking.v1 import events_pb2 as bev
from liftfit.ops.v1 import operations_pb2 as pb
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from servicekit import envelope, grpc_server
from servicekit.records import Delivery
from services.access.domain.model import GrantState
from services.access.service_layer import jobs
from services.access.service_layer.drift_check import run_drift_check
from tests.access.harness import AccessHarness, Booking, access_window, new_id, window_from_now
from tests.operations.operator import new_trace_id, operations, traceparent
from tests.support import tls

if TYPE_CHECKING:
    from liftfit.ops.v1.operations_pb2_grpc import OperationsServiceAsyncStub

_offsets = count(10_000)  # apart from the harness's own offsets


@pytest.fixture
async def ops(access: AccessHarness) -> AsyncIterator[OperationsServiceAsyncStub]:
    """The access app's gRPC services on a server of their own; the harness runs no workers."""
    runtime = access.app.runtime
    server, port, _ = await grpc_server.start_server(
        tls.endpoint("access"),
        runtime.registrations,
        runtime.service_names,
        runtime.error_domain,
        runtime.error_domains,
    )
    channel = tls.channel(f"127.0.0.1:{port}")
    yield operations(channel)
    await channel.close(None)
    await server.stop(None)


async def _confirmed_in_trace(access: AccessHarness, trace_id: str) -> Booking:
    """BookingConfirmed through the real inbox, with the trace header booking's relay sends."""
    booking = Booking(new_id(), new_id(), new_id(), window_from_now())
    event = bev.BookingConfirmed(
        booking_id=booking.booking_id,
        org_id=booking.org_id,
        user="anna",
        slot_id=booking.slot_id,
        window=access_window(booking.window),
        payment_mode="card",
    )
    wrapped = envelope.wrap(event, booking.booking_id, "booking", {}, uuid.uuid4())
    delivery = Delivery(
        access.app.settings.topic("booking.events"),
        0,
        next(_offsets),
        wrapped.SerializeToString(),
        headers=[("traceparent", traceparent(trace_id).encode())],
        key=booking.booking_id.encode(),
    )
    assert await access.app.inbox.deliver(delivery) == "processed"
    return booking


async def test_describe_booking_shows_the_live_grant_its_provision_and_the_booking_trace(
    access: AccessHarness,
    ops: OperationsServiceAsyncStub,
    span_exporter: InMemorySpanExporter,
) -> None:
    trace_id = new_trace_id()
    booking = await _confirmed_in_trace(access, trace_id)
    await access.run_jobs()
    grant = await access.grant(booking)
    assert grant.state is GrantState.ACTIVE
    [provision] = await access.provisions(grant)
    code_id = provision.provider_code_id or ""

    side = await ops.DescribeBooking(pb.DescribeBookingRequest(booking_id=booking.booking_id))
    assert (side.service, side.known, side.state) == ("access", True, "active")
    assert side.facts["grant_id"] == grant.grant_id
    assert side.facts["provision_id"] == provision.provision_id
    assert side.facts["provision_state"] == "created"
    assert side.facts["provider_code_id"] == code_id != ""
    assert list(side.subjects) == [
        booking.booking_id,
        grant.grant_id,
        provision.provision_id,
        code_id,
    ]
    assert side.trace_id == trace_id
    pending = [(e.source, e.name, e.subject) for e in side.pending_effects]
    assert ("timer", jobs.END_OF_WINDOW, grant.grant_id) in pending
    pin = await access.pin(grant)
    assert pin and pin not in str(side)


async def test_drift_findings_are_the_drift_checks_stored_findings(
    access: AccessHarness, ops: OperationsServiceAsyncStub
) -> None:
    booking = await access.confirm()
    await access.run_jobs()
    unknown = await access.add_code(
        f"{access.app.settings.alias_prefix}-{uuid.uuid4()}", booking.window
    )
    await run_drift_check(access.app.deps)
    async with access.app.deps.uows.transaction() as uow:
        [stored] = await uow.findings.listed(None)

    [finding] = (await ops.ListDriftFindings(pb.ListDriftFindingsRequest(state="open"))).findings
    assert (finding.finding_id, finding.service, finding.subject_id) == (
        stored.finding_id,
        "access",
        unknown["access_code_id"],
    )
    assert (finding.kind, finding.state, finding.needs_human) == (stored.kind, "open", True)
    assert (finding.problem, finding.truth, finding.repair) == (
        stored.problem,
        stored.truth,
        stored.repair,
    )
    assert finding.found_at.ToDatetime(tzinfo=stored.found_at.tzinfo) == stored.found_at
    repaired = await ops.ListDriftFindings(pb.ListDriftFindingsRequest(state="repaired"))
    assert list(repaired.findings) == []
