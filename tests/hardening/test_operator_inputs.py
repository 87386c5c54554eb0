"""Every RPC of the operators' view (served by every service; driven here at the booking
service) over real gRPC with generated hostile field values: each answer is OK or a
deliberate refusal (see hostile.answered_deliberately), never INTERNAL or a leak."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from liftfit.ops.v1 import operations_pb2 as pb

from servicekit.incidents import Incidents
from services.booking.adapters import orm
from tests.booking.harness import BookingHarness, new_id
from tests.hardening.hostile import answered_deliberately, int32s, text_or_hostile, timestamps
from tests.hardening.test_rpc_inputs import CALL_TIMEOUT_S, FUZZ, Calls
from tests.operations.operator import operations

# Times are drawn around one moment fixed for the run: a bound read from the clock inside the
# strategy changes between examples, and Hypothesis then refuses the strategy as inconsistent.
DRAWN_AROUND_S = int(time.time())


@dataclass(frozen=True)
class OperatorWorld:
    """Real rows for requests to name: a booking, its outbox row and an open incident."""

    stub: Any
    booking_id: str
    effect_id: str
    incident_id: str


@pytest.fixture
async def operator_world(booking: BookingHarness) -> OperatorWorld:
    [slot] = await booking.space_with_slots(1)
    booking_id = (await booking.checkout(slot.slot_id, new_id())).booking.booking_id
    stub = operations(booking.channel)
    rows = (await stub.ListOutbox(pb.ListOutboxRequest())).rows
    async with booking.app.uows.sessions() as session, session.begin():
        await Incidents(orm.eventing.incidents).open(session, "timer_failed", booking_id, "x")
    [incident] = (await stub.ListIncidents(pb.ListIncidentsRequest())).incidents
    return OperatorWorld(stub, booking_id, rows[0].effect_id, incident.incident_id)


@st.composite
def _operator_calls(draw: st.DrawFn, world: OperatorWorld) -> Calls:
    operator = text_or_hostile("ops-anna")
    note = text_or_hostile("", "checked at the gateway")
    states = text_or_hostile("", "pending", "failed", "open", "resolved", "repaired", "cleared")
    return [
        (
            "DescribeBooking",
            pb.DescribeBookingRequest(booking_id=draw(text_or_hostile(world.booking_id))),
        ),
        ("ListOutbox", pb.ListOutboxRequest(state=draw(states), limit=draw(int32s(200, 1000)))),
        (
            "ReplayEffect",
            pb.ReplayEffectRequest(
                effect_id=draw(text_or_hostile(world.effect_id)),
                operator=draw(operator),
                reason=draw(note),
            ),
        ),
        ("ListIncidents", pb.ListIncidentsRequest(state=draw(states))),
        (
            "ResolveIncident",
            pb.ResolveIncidentRequest(
                incident_id=draw(text_or_hostile(world.incident_id)),
                operator=draw(operator),
                decision=draw(text_or_hostile("refunded by hand")),
                note=draw(note),
            ),
        ),
        ("ListDriftFindings", pb.ListDriftFindingsRequest(state=draw(states))),
        ("GetBacklog", pb.GetBacklogRequest()),
        (
            "ListAudit",
            pb.ListAuditRequest(
                subject=draw(text_or_hostile("", world.effect_id)), limit=draw(int32s(200))
            ),
        ),
        (
            "ListBookingStates",
            pb.ListBookingStatesRequest(
                booking_ids=draw(st.lists(text_or_hostile(world.booking_id), max_size=3)),
                state=draw(states),
                before=draw(timestamps(DRAWN_AROUND_S)),
                limit=draw(int32s(200, 1000)),
            ),
        ),
    ]


@FUZZ
@given(data=st.data())
async def test_every_operator_rpc_answers_hostile_input_deliberately(
    operator_world: OperatorWorld, data: st.DataObject
) -> None:
    calls = data.draw(_operator_calls(operator_world))
    assert {rpc for rpc, _ in calls} == set(
        pb.DESCRIPTOR.services_by_name["OperationsService"].methods_by_name
    )
    for rpc, request in calls:
        call = getattr(operator_world.stub, rpc)(request, timeout=CALL_TIMEOUT_S)
        try:
            await answered_deliberately(request, call)
        except AssertionError as failure:
            raise AssertionError(f"{rpc}: {failure}") from None
