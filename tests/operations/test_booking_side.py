"""The operators' view at the booking service: a booking as it holds it, and the audited
replay of a failed effect (servicekit.operations, the same in every service)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable

import grpc
from liftfit.booking.v1 import booking_pb2 as bpb
from liftfit.ops.v1 import operations_pb2 as pb
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import select, text, update

from services.booking.adapters import orm
from tests.booking.harness import BookingHarness, eventually
from tests.operations.operator import (
    audit_rows,
    new_id,
    operations,
    refused,
    relay_kept_off,
    written_by,
)

OUTBOX = orm.eventing.outbox


async def _card_booking(booking: BookingHarness) -> tuple[bpb.Slot, bpb.Booking]:
    [slot] = await booking.space_with_slots(1)
    return slot, (await booking.checkout(slot.slot_id, new_id())).booking


async def _outbox_row(booking: BookingHarness, effect_id: str) -> tuple[str, int]:
    t = OUTBOX.c
    async with booking.app.uows.sessions() as session:
        query = select(t.state, t.dispatch_generation).where(t.effect_id == uuid.UUID(effect_id))
        state, generation = (await session.execute(query)).one()
    return str(state), int(generation)


async def test_describe_booking_shows_its_state_slot_hold_timer_and_stored_trace(
    booking: BookingHarness, span_exporter: InMemorySpanExporter
) -> None:
    slot, held = await _card_booking(booking)
    side = await operations(booking.channel).DescribeBooking(
        pb.DescribeBookingRequest(booking_id=held.booking_id)
    )
    assert (side.service, side.booking_id, side.known, side.state) == (
        "booking",
        held.booking_id,
        True,
        "pending",
    )
    assert side.facts["slot_id"] == slot.slot_id and side.facts["slot_state"] == "held"
    assert side.facts["payment_mode"] == "card" and side.facts["paid"] == "false"
    assert list(side.subjects) == [held.booking_id]
    assert len(held.trace_id) == 32 and side.trace_id == held.trace_id
    timers = [e for e in side.pending_effects if e.source == "timer"]
    assert [(e.name, e.subject, e.state) for e in timers] == [
        ("release_unpaid_hold", held.booking_id, "pending")
    ]
    assert timers[0].due_at == held.hold_expires_at
    assert list(side.failed_effects) == [] and list(side.open_incidents) == []


async def test_a_booking_the_service_never_saw_is_unknown_not_refused(
    booking: BookingHarness,
) -> None:
    nobody = new_id()
    side = await operations(booking.channel).DescribeBooking(
        pb.DescribeBookingRequest(booking_id=nobody)
    )
    assert (side.known, side.state, side.trace_id, list(side.subjects)) == (
        False,
        "",
        "",
        [nobody],
    )
    assert list(side.pending_effects) == [] and dict(side.facts) == {}


async def test_a_failed_effect_is_listed_replayed_under_a_new_generation_audited_and_dispatched(
    booking: BookingHarness,
) -> None:
    ops = operations(booking.channel)
    _, held = await _card_booking(booking)
    rows = (await ops.ListOutbox(pb.ListOutboxRequest())).rows
    [row] = [r for r in rows if r.key == held.booking_id]  # beside the space's SpaceCreated
    assert row.event_type.endswith("PaymentRequested")

    async def dispatched(generation: int) -> bool:
        return await _outbox_row(booking, row.effect_id) == ("dispatched", generation)

    await eventually(lambda: dispatched(0))
    async with booking.app.uows.sessions() as session, session.begin():
        await session.execute(
            update(OUTBOX)
            .where(OUTBOX.c.effect_id == uuid.UUID(row.effect_id))
            .values(state="failed", last_error="the broker refused it (forced by the test)")
        )
    [failed] = (await ops.ListOutbox(pb.ListOutboxRequest(state="failed"))).rows
    assert (failed.effect_id, failed.state, failed.dispatch_generation) == (
        row.effect_id,
        "failed",
        0,
    )
    side = await ops.DescribeBooking(pb.DescribeBookingRequest(booking_id=held.booking_id))
    assert [(e.source, e.effect_id) for e in side.failed_effects] == [("outbox", row.effect_id)]
    assert (await ops.GetBacklog(pb.GetBacklogRequest())).failed == 1

    sessions, tables = booking.app.uows.sessions, orm.eventing
    async with relay_kept_off(sessions, tables, row.effect_id) as held_back:
        replayed = await ops.ReplayEffect(
            pb.ReplayEffectRequest(
                effect_id=row.effect_id, operator="ops-anna", reason="broker fixed"
            )
        )
        assert (replayed.effect_id, replayed.dispatch_generation) == (row.effect_id, 1)
        assert await _outbox_row(booking, row.effect_id) == ("pending", 1)
        waiting = await ops.GetBacklog(pb.GetBacklogRequest())
        assert (waiting.pending, waiting.failed) == (1, 0)
        assert waiting.oldest_pending_at == row.created_at  # it waits since it was written
        replay_transaction = await written_by(held_back, "outbox", "effect_id", row.effect_id)
    [audited] = await audit_rows(sessions, tables, row.effect_id)
    assert (audited.actor, audited.action) == ("ops-anna", "replay_effect")
    assert audited.detail == {"reason": "broker fixed", "dispatch_generation": 1}
    assert audited.written_by == replay_transaction  # one transaction: the replay and its audit
    await eventually(lambda: dispatched(1))

    [entry] = (await ops.ListAudit(pb.ListAuditRequest(subject=row.effect_id))).entries
    assert json.loads(entry.detail_json)["dispatch_generation"] == 1

    async def drained() -> pb.Backlog | None:
        backlog = await ops.GetBacklog(pb.GetBacklogRequest())
        return backlog if backlog.pending == 0 else None

    backlog = await eventually(drained)
    assert (backlog.failed, backlog.HasField("oldest_pending_at")) == (0, False)


async def test_replaying_an_effect_nobody_wrote_is_not_found_and_audits_nothing(
    booking: BookingHarness,
) -> None:
    unknown = new_id()
    request = pb.ReplayEffectRequest(effect_id=unknown, operator="ops-anna", reason="why not")
    answer = await refused(operations(booking.channel).ReplayEffect(request))
    assert (answer.code, answer.reason, answer.domain) == (
        grpc.StatusCode.NOT_FOUND,
        "not_found",
        "liftfit.ops",
    )
    assert await audit_rows(booking.app.uows.sessions, orm.eventing, unknown) == []


async def test_bad_operator_requests_are_refused_naming_the_field_in_the_ops_domain(
    booking: BookingHarness,
) -> None:
    ops = operations(booking.channel)
    calls: dict[str, Awaitable[object]] = {
        "booking_id": ops.DescribeBooking(pb.DescribeBookingRequest(booking_id=new_id().upper())),
        "state": ops.ListOutbox(pb.ListOutboxRequest(state="stuck")),
        "limit": ops.ListAudit(pb.ListAuditRequest(limit=100_000)),
        "effect_id": ops.ReplayEffect(pb.ReplayEffectRequest(effect_id="1", operator="anna")),
        "operator": ops.ReplayEffect(pb.ReplayEffectRequest(effect_id=new_id(), operator="")),
        "reason": ops.ReplayEffect(
            pb.ReplayEffectRequest(effect_id=new_id(), operator="anna", reason="x" * 2001)
        ),
        "incident_id": ops.ResolveIncident(
            pb.ResolveIncidentRequest(incident_id=f"urn:uuid:{new_id()}", operator="anna")
        ),
        "decision": ops.ResolveIncident(
            pb.ResolveIncidentRequest(incident_id=new_id(), operator="anna", decision="\x00")
        ),
    }
    for field, call in calls.items():
        answer = await refused(call)
        assert (answer.code, answer.reason, answer.domain, answer.field) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "validation_error",
            "liftfit.ops",
            field,
        ), field
    # The service's own API keeps its own domain on the same server.
    own = await refused(booking.booking(new_id(), "not-a-uuid"))
    assert (own.reason, own.domain) == ("validation_error", "liftfit.booking")


async def test_drift_findings_name_holds_not_released_and_slots_awaiting_revocation_too_long(
    booking: BookingHarness,
) -> None:
    _, held = await _card_booking(booking)
    [closed] = await booking.space_with_slots(1)
    async with booking.app.uows.sessions() as session, session.begin():
        await session.execute(
            text(
                "UPDATE bookings SET hold_expires_at = now() - interval '10 minutes'"
                " WHERE booking_id = :id"
            ),
            {"id": held.booking_id},
        )
        await session.execute(
            text(
                "UPDATE slots SET state = 'closed', closed_reason = 'awaiting_revocation',"
                " updated_at = now() - interval '2 hours' WHERE slot_id = :id"
            ),
            {"id": closed.slot_id},
        )
    ops = operations(booking.channel)
    found = (await ops.ListDriftFindings(pb.ListDriftFindingsRequest())).findings
    assert sorted((f.kind, f.subject_id) for f in found) == [
        ("hold_not_released", held.booking_id),
        ("slot_awaiting_revocation_too_long", closed.slot_id),
    ]
    for finding in found:
        assert (finding.service, finding.state, finding.needs_human) == ("booking", "open", True)
        assert finding.problem and finding.truth and finding.repair
    again = (await ops.ListDriftFindings(pb.ListDriftFindingsRequest(state="open"))).findings
    assert {f.finding_id for f in again} == {f.finding_id for f in found}  # stable ids
    cleared = await ops.ListDriftFindings(pb.ListDriftFindingsRequest(state="cleared"))
    assert list(cleared.findings) == []


async def test_booking_states_are_listed_by_id_or_by_state_and_bad_asks_are_refused(
    booking: BookingHarness,
) -> None:
    ops = operations(booking.channel)
    _, held = await _card_booking(booking)
    by_id = await ops.ListBookingStates(pb.ListBookingStatesRequest(booking_ids=[held.booking_id]))
    assert [(b.booking_id, b.state) for b in by_id.bookings] == [(held.booking_id, "pending")]
    by_state = await ops.ListBookingStates(pb.ListBookingStatesRequest(state="pending"))
    assert held.booking_id in [b.booking_id for b in by_state.bookings]
    earlier = by_id.bookings[0].since
    before_it = await ops.ListBookingStates(
        pb.ListBookingStatesRequest(state="pending", before=earlier)
    )
    assert held.booking_id not in [b.booking_id for b in before_it.bookings]

    bad = {
        "booking_ids": pb.ListBookingStatesRequest(booking_ids=[held.booking_id.upper()]),
        "state": pb.ListBookingStatesRequest(state=""),
        "limit": pb.ListBookingStatesRequest(state="pending", limit=1001),
    }
    for field, request in bad.items():
        answer = await refused(ops.ListBookingStates(request))
        assert (answer.code, answer.reason, answer.field) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "validation_error",
            field,
        ), field
    too_many = pb.ListBookingStatesRequest(booking_ids=[new_id() for _ in range(1001)])
    assert (await refused(ops.ListBookingStates(too_many))).field == "booking_ids"
