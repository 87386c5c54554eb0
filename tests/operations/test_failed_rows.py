"""A failed outbox row is an open incident, with its reason, until it is replayed or an
operator resolves it (servicekit.operations.failed_rows, the same in every service).

The row is marked failed where the relay would mark it, in the service's own outbox: no
call can make the broker refuse one record."""

from __future__ import annotations

import uuid

from liftfit.ops.v1 import operations_pb2 as pb
from sqlalchemy import select, update

from services.booking.adapters import orm
from tests.booking.harness import BookingHarness, eventually
from tests.operations.operator import new_id, operations
from tests.support import tls

OUTBOX = orm.eventing.outbox
KIND = "outbox_row_failed"
REASON = "KafkaError: the broker refused the record (made by the test)"


async def _failed_request(booking: BookingHarness) -> tuple[str, str]:
    """A card booking whose PaymentRequested went out, then marked failed; its booking id
    and the row's effect id."""
    [slot] = await booking.space_with_slots(1)
    held = (await booking.checkout(slot.slot_id, new_id())).booking
    t = OUTBOX.c

    async def dispatched() -> str | None:
        async with booking.app.uows.sessions() as session:
            query = select(t.effect_id).where(t.key == held.booking_id, t.state == "dispatched")
            found = (await session.execute(query)).scalar_one_or_none()
        return str(found) if found else None

    effect_id = await eventually(dispatched)
    async with booking.app.uows.sessions() as session, session.begin():
        await session.execute(
            update(OUTBOX)
            .where(t.effect_id == uuid.UUID(effect_id))
            .values(state="failed", attempts=8, last_error=REASON)
        )
    return held.booking_id, effect_id


async def _open_of(booking: BookingHarness, effect_id: str) -> list[pb.Incident]:
    listed = await operations(booking.channel).ListIncidents(pb.ListIncidentsRequest(state="open"))
    return [i for i in listed.incidents if i.kind == KIND and i.subject_id.startswith(effect_id)]


async def test_a_failed_row_is_an_open_incident_with_its_reason_until_it_is_replayed(
    booking: BookingHarness,
) -> None:
    booking_id, effect_id = await _failed_request(booking)
    ops = operations(booking.channel)

    [incident] = await _open_of(booking, effect_id)
    assert incident.subject_id == f"{effect_id}/0:{booking_id}"
    assert (incident.service, incident.state) == ("booking", "open")
    for told in (REASON, "liftfit.booking.v1.PaymentRequested", "booking.events", booking_id):
        assert told in incident.detail, (told, incident.detail)
    assert [i.incident_id for i in await _open_of(booking, effect_id)] == [incident.incident_id]
    side = await ops.DescribeBooking(pb.DescribeBookingRequest(booking_id=booking_id))
    assert [i.incident_id for i in side.open_incidents] == [incident.incident_id]

    await ops.ReplayEffect(
        pb.ReplayEffectRequest(effect_id=effect_id, operator="ops-anna", reason="broker fixed")
    )
    assert await _open_of(booking, effect_id) == []
    resolved = await ops.ListIncidents(pb.ListIncidentsRequest(state="resolved"))
    [closed] = [i for i in resolved.incidents if i.incident_id == incident.incident_id]
    assert (closed.resolved_by, closed.decision, closed.note) == (
        "ops-anna",
        "replayed",
        "broker fixed",
    )
    side = await ops.DescribeBooking(pb.DescribeBookingRequest(booking_id=booking_id))
    assert list(side.open_incidents) == []


async def test_a_resolved_failed_row_stays_resolved_and_fails_anew_after_a_replay(
    booking: BookingHarness,
) -> None:
    booking_id, effect_id = await _failed_request(booking)
    ops = operations(booking.channel)
    [first] = await _open_of(booking, effect_id)
    await ops.ResolveIncident(
        pb.ResolveIncidentRequest(
            incident_id=first.incident_id, operator="ops-anna", decision="not needed"
        )
    )
    assert await _open_of(booking, effect_id) == []  # the row is still failed, but decided

    await ops.ReplayEffect(pb.ReplayEffectRequest(effect_id=effect_id, operator="ops-anna"))

    async def out_again() -> bool:
        async with booking.app.uows.sessions() as session:
            query = select(OUTBOX.c.state, OUTBOX.c.dispatch_generation).where(
                OUTBOX.c.effect_id == uuid.UUID(effect_id)
            )
            return tuple((await session.execute(query)).one()) == ("dispatched", 1)

    await eventually(out_again)
    async with booking.app.uows.sessions() as session, session.begin():
        await session.execute(
            update(OUTBOX)
            .where(OUTBOX.c.effect_id == uuid.UUID(effect_id))
            .values(state="failed", last_error=REASON)
        )
    [second] = await _open_of(booking, effect_id)
    assert second.subject_id == f"{effect_id}/1:{booking_id}"
    assert second.incident_id != first.incident_id


async def test_an_operator_named_by_the_operators_tools_is_recorded_beside_the_tools(
    booking: BookingHarness,
) -> None:
    """The tools' certificate proves which tool called, not who typed the name: the audit
    and the incident say both. From the gateway, which authenticated the operator, the
    name stands alone (the test above)."""
    _, effect_id = await _failed_request(booking)
    [incident] = await _open_of(booking, effect_id)
    async with tls.channel(booking.app.grpc_target, "operator-tools") as channel:
        await operations(channel).ReplayEffect(
            pb.ReplayEffectRequest(effect_id=effect_id, operator="ops-anna", reason="by hand")
        )
    resolved = await operations(booking.channel).ListIncidents(
        pb.ListIncidentsRequest(state="resolved")
    )
    [closed] = [i for i in resolved.incidents if i.incident_id == incident.incident_id]
    audit = orm.eventing.audit_log.c
    async with booking.app.uows.sessions() as session:
        query = select(audit.actor).where(audit.subject == effect_id)
        actors = list((await session.execute(query)).scalars())
    assert closed.resolved_by == "ops-anna via operator-tools"
    assert actors == ["ops-anna via operator-tools"]
