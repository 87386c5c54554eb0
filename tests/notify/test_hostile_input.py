"""Hostile input at the notify service's edges: every RPC answers hostile fields
deliberately (a refusal naming the field, no leak, no echo), and records that are not
events, or events whose fields name no booking or a malformed address, are parked while
the valid events around them make their mails and the consumer keeps serving."""

from __future__ import annotations

from typing import Any

from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from liftfit.booking.v1 import events_pb2 as bev
from liftfit.notify.v1 import notify_pb2 as npb
from sqlalchemy import select

from services.notify.adapters import orm
from tests.hardening.hostile import answered_deliberately, text_or_hostile
from tests.notify.harness import NotifyHarness, a_booking, confirmed, new_id
from tests.support import tls
from tests.support.waiting import eventually

FUZZ = settings(
    max_examples=25,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@st.composite
def _calls(draw: st.DrawFn) -> list[tuple[str, Any]]:
    some_id = text_or_hostile(new_id(), "")
    state = text_or_hostile("", "unknown", "failed", "sent", "open")
    return [
        ("GetDelivery", npb.GetDeliveryRequest(delivery_key=draw(some_id))),
        (
            "ListDeliveries",
            npb.ListDeliveriesRequest(booking_id=draw(some_id), order_id=draw(some_id)),
        ),
        ("ListUndecidedDeliveries", npb.ListUndecidedDeliveriesRequest(state=draw(state))),
        (
            "DecideDelivery",
            npb.DecideDeliveryRequest(
                delivery_key=draw(some_id),
                decision=draw(text_or_hostile("send_again", "mark_sent", "SEND")),
                operator=draw(text_or_hostile("olga")),
                note=draw(text_or_hostile("", "checked")),
            ),
        ),
        ("ListIncidents", npb.ListIncidentsRequest(state=draw(state))),
    ]


@FUZZ
@given(data=st.data())
async def test_every_notify_rpc_answers_hostile_input_deliberately(
    notify: NotifyHarness, data: st.DataObject
) -> None:
    calls = data.draw(_calls())
    assert {rpc for rpc, _ in calls} == set(
        npb.DESCRIPTOR.services_by_name["NotifyService"].methods_by_name
    )
    for rpc, request in calls:
        try:
            await answered_deliberately(request, getattr(notify.stub, rpc)(request, timeout=10))
        except AssertionError as failure:
            raise AssertionError(f"{rpc}: {failure}") from None


async def test_bad_records_are_parked_and_the_valid_events_around_them_make_their_mails(
    notify: NotifyHarness,
) -> None:
    good, injected, no_id = a_booking(), a_booking(), a_booking()
    injected.email = "anna@example.test\r\nBcc: eve@example.test"
    no_id.booking_id = "urn:uuid:" + new_id()
    bad = [
        b"not an envelope",
        notify.record("booking.events", injected.booking_id, confirmed(injected)),
        notify.record("booking.events", new_id(), confirmed(no_id)),
        notify.record(
            "booking.events",
            new_id(),
            bev.BookingConfirmed(booking_id=new_id(), contact=bev.Contact(locale="xx")),
        ),
    ]
    await notify.publish("booking.events", good.booking_id, confirmed(good))
    for payload in bad:
        await notify.send("booking.events", new_id(), payload)
    later = a_booking()
    await notify.publish("booking.events", later.booking_id, confirmed(later))

    inbox = orm.eventing.inbox

    async def parked() -> int | None:
        async with notify.app.deps.uows.sessions() as session:
            rows = await session.execute(select(inbox.c.state).where(inbox.c.state == "failed"))
            count = len(rows.all())
        return count if count == len(bad) else None

    await eventually(parked, 20)
    for booking in (good, later):
        [delivery] = await notify.deliveries_when(booking.booking_id, 1, "sent")
        assert len(await notify.mails(delivery.delivery_key)) == 1
    assert await notify.deliveries_of(injected.booking_id) == []
    async with tls.channel(f"127.0.0.1:{notify.app.grpc_port}") as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
