"""Acceptance b: a connection dropped after DATA leaves the delivery `unknown` with an
incident, and nothing more is sent (not by the job, not by another copy of the event)
until an operator decides; the decision is in the audit log and its outcome is one more
mail (send again) or none (mark sent)."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from liftfit.notify.v1 import notify_pb2 as npb
from sqlalchemy import select

from servicekit.errors import reason_of
from servicekit.records import Delivery
from services.notify.adapters import orm
from services.notify.domain.model import DeliveryState
from tests.notify.harness import NotifyHarness, a_booking, confirmed
from tests.support.waiting import eventually


async def _unknown(notify: NotifyHarness) -> tuple[str, npb.Delivery]:
    """A confirmation whose connection the sandbox drops after taking the data."""
    await notify.faults(drop_after_data=1)
    booking = a_booking()
    await notify.publish("booking.events", booking.booking_id, confirmed(booking))

    async def queued() -> list[npb.Delivery] | None:
        return await notify.deliveries_of(booking.booking_id) or None

    [delivery] = await eventually(queued, 15)
    unknown = await notify.delivery_in(delivery.delivery_key, "unknown")
    return booking.booking_id, unknown


async def _audit(notify: NotifyHarness, key: str) -> list[dict[str, object]]:
    audit = orm.eventing.audit_log
    async with notify.app.deps.uows.sessions() as session:
        rows = await session.execute(select(audit).where(audit.c.subject == key))
        return [dict(row._mapping) for row in rows]


async def _decide(notify: NotifyHarness, key: str, decision: str) -> npb.Delivery:
    request = npb.DecideDeliveryRequest(
        delivery_key=key, decision=decision, operator="olga", note="checked with the customer"
    )
    decided: npb.Delivery = await notify.stub.DecideDelivery(request)
    return decided


async def test_a_drop_after_data_is_unknown_and_nothing_more_is_sent_until_marked_sent(
    notify: NotifyHarness,
) -> None:
    booking_id, delivery = await _unknown(notify)
    key = delivery.delivery_key
    assert "after the data" in delivery.last_error
    [incident] = await notify.incidents(key)
    assert incident.kind == "delivery_unknown"
    undecided = await notify.stub.ListUndecidedDeliveries(npb.ListUndecidedDeliveriesRequest())
    assert key in [d.delivery_key for d in undecided.deliveries]

    # The same event again, under a new event id: consumed, and still no second try.
    booking = a_booking()
    booking.booking_id = booking_id
    await notify.publish("booking.events", booking_id, confirmed(booking))
    await eventually(notify.all_consumed, 15)
    assert not await notify.sends_pending(key)
    assert len(await notify.mails(key)) == 1  # the one the server took before it hung up
    assert (await notify.delivery(key)).state == "unknown"

    decided = await _decide(notify, key, "mark_sent")
    assert decided.state == "sent"
    assert await notify.incidents(key) == []  # resolved by the decision
    assert not await notify.sends_pending(key)
    assert len(await notify.mails(key)) == 1  # marked sent: no mail
    [entry] = await _audit(notify, key)
    assert (entry["actor"], entry["action"]) == ("olga", "delivery.mark_sent")
    assert entry["detail"] == {"from": "unknown", "to": "sent", "note": "checked with the customer"}

    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _decide(notify, key, "send_again")
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert reason_of(refused.value) == "delivery_not_undecided"


async def test_an_unknown_delivery_sent_again_by_an_operator_is_one_more_mail(
    notify: NotifyHarness,
) -> None:
    _, delivery = await _unknown(notify)
    key = delivery.delivery_key
    assert not await notify.sends_pending(key)
    assert len(await notify.mails(key)) == 1

    queued = await _decide(notify, key, "send_again")
    assert queued.state == "queued"
    sent = await notify.delivery_in(key, "sent")
    assert sent.tries == 2
    mails = await notify.mails(key)
    assert len(mails) == 2  # the dropped one and the one sent again, under one Message-ID
    assert {m["message_id"] for m in mails} == {delivery.message_id}
    [entry] = await _audit(notify, key)
    assert (entry["actor"], entry["action"]) == ("olga", "delivery.send_again")
    assert not await notify.sends_pending(key)


async def test_a_delivery_a_stopped_process_left_sending_becomes_unknown_and_is_not_sent(
    make_notify: Any,
) -> None:
    """The process died between marking the delivery `sending` and recording the answer:
    the next try of its job cannot know whether the server took the mail."""
    notify: NotifyHarness = await make_notify(start=False)
    booking = a_booking()
    record = notify.record("booking.events", booking.booking_id, confirmed(booking))
    topic = notify.prefix + "booking.events"
    delivered = Delivery(topic, 0, 0, record, key=booking.booking_id.encode())
    assert await notify.app.inbox.deliver(delivered) == "processed"
    async with notify.app.deps.uows.transaction() as uow:
        [delivery] = await uow.deliveries.of_subject(booking.booking_id)
        assert await uow.deliveries.move(
            delivery.delivery_key, DeliveryState.QUEUED, DeliveryState.SENDING, tried=True
        )
    assert await notify.app.timer_runner.fire_due() == 1
    async with notify.app.deps.uows.transaction() as uow:
        found = await uow.deliveries.get(delivery.delivery_key)
        incidents = await uow.incidents.listed("open")
    assert found is not None and found.state is DeliveryState.UNKNOWN
    assert [(i.kind, i.subject_id) for i in incidents] == [
        ("delivery_unknown", delivery.delivery_key)
    ]
    assert await notify.mails(delivery.delivery_key) == []
    assert not await notify.sends_pending(delivery.delivery_key)
