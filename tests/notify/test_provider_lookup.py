"""An `unknown` delivery settled by the provider's log (the mail sandbox's lookup by
Message-ID): taken means `sent` with no mail more; certainly never received means one
more try under the same Message-ID, never two; no usable answer leaves it `unknown` with
its incident, asked again a bounded number of times. Without a lookup (plain SMTP) the
delivery waits for a person, as before."""

from __future__ import annotations

from typing import Any

import pytest
from liftfit.notify.v1 import notify_pb2 as npb
from sqlalchemy import select

from servicekit.records import Delivery
from services.notify.adapters import orm
from services.notify.domain.model import DeliveryState
from services.notify.domain.recovery import LookupAnswer, Verdict
from services.notify.service_layer import jobs
from services.notify.service_layer.recovering import ACTOR
from tests.notify.fake_lookup import FakeMailLookup
from tests.notify.harness import NotifyHarness, a_booking, confirmed
from tests.support.sandboxes import MailSandbox, free_port
from tests.support.waiting import eventually

QUEUED, SENDING = DeliveryState.QUEUED, DeliveryState.SENDING


def lookup_of(mail: MailSandbox) -> dict[str, Any]:
    return {"mail_lookup_url": f"{mail.url}/v1/lookup"}


async def _confirmation(notify: NotifyHarness, **faults: Any) -> str:
    """The key of a booking confirmation sent while the sandbox has `faults`."""
    await notify.faults(**faults)
    booking = a_booking()
    await notify.publish("booking.events", booking.booking_id, confirmed(booking))

    async def queued() -> list[npb.Delivery] | None:
        return await notify.deliveries_of(booking.booking_id) or None

    [delivery] = await eventually(queued, 15)
    return str(delivery.delivery_key)


async def _audit(notify: NotifyHarness, key: str) -> list[tuple[str, str]]:
    audit = orm.eventing.audit_log
    async with notify.app.deps.uows.sessions() as session:
        rows = await session.execute(select(audit).where(audit.c.subject == key))
        return [(row.actor, row.action) for row in rows]


async def _recoveries(notify: NotifyHarness, key: str) -> list[tuple[str, int]]:
    """The recovery timers of the delivery: state and attempts, in order."""
    timers = orm.eventing.timers
    async with notify.app.deps.uows.sessions() as session:
        query = (
            select(timers.c.state, timers.c.expected)
            .where(timers.c.aggregate_id == key, timers.c.kind == jobs.RECOVER)
            .order_by(timers.c.due_at)
        )
        return [(row.state, int(row.expected["try"])) for row in await session.execute(query)]


async def _settled_unknown(notify: NotifyHarness, key: str) -> None:
    """`unknown`, and no job of the delivery left to run."""
    await notify.delivery_in(key, "unknown", within=30)
    await eventually(lambda: _nothing_pending(notify, key), 30)


async def _nothing_pending(notify: NotifyHarness, key: str) -> bool:
    return not await notify.sends_pending(key)


async def test_an_unknown_mail_the_provider_took_becomes_sent_with_no_mail_more(
    make_notify: Any, mail_sandbox: MailSandbox
) -> None:
    notify: NotifyHarness = await make_notify(**lookup_of(mail_sandbox))
    key = await _confirmation(notify, drop_after_data=1)

    sent = await notify.delivery_in(key, "sent", within=30)

    assert sent.tries == 1
    assert len(await notify.mails(key)) == 1
    assert await notify.incidents(key) == []
    assert await _audit(notify, key) == [(ACTOR, "delivery.mark_sent")]


async def test_an_unknown_mail_the_provider_never_received_is_sent_once(
    make_notify: Any, mail_sandbox: MailSandbox
) -> None:
    notify: NotifyHarness = await make_notify(**lookup_of(mail_sandbox))
    key = await _confirmation(notify, lose_after_data=1)

    sent = await notify.delivery_in(key, "sent", within=30)

    assert sent.tries == 2
    assert len(await notify.mails(key)) == 1
    assert await notify.incidents(key) == []
    assert await _audit(notify, key) == [(ACTOR, "delivery.send_again")]


async def test_a_mail_lost_again_after_its_second_try_is_not_sent_a_third_time(
    make_notify: Any, mail_sandbox: MailSandbox
) -> None:
    notify: NotifyHarness = await make_notify(**lookup_of(mail_sandbox))
    key = await _confirmation(notify, lose_after_data=2)

    await eventually(lambda: _asked_after_the_second_try(notify, key), 30)
    await _settled_unknown(notify, key)

    assert (await notify.delivery(key)).tries == 2
    assert await notify.mails(key) == []
    [incident] = await notify.incidents(key)
    assert incident.kind == "delivery_unknown"
    assert await _audit(notify, key) == [(ACTOR, "delivery.send_again")]


async def _asked_after_the_second_try(notify: NotifyHarness, key: str) -> bool:
    return [state for state, _ in await _recoveries(notify, key)] == ["fired", "fired"]


@pytest.mark.parametrize("lookup", ["unreachable", "garbled"])
async def test_an_unreachable_or_garbled_lookup_leaves_the_delivery_unknown_with_its_incident(
    make_notify: Any, mail_sandbox: MailSandbox, lookup: str
) -> None:
    url = {
        "unreachable": f"http://127.0.0.1:{free_port()}/v1/lookup",
        "garbled": f"{mail_sandbox.url}/messages",  # a JSON object, but not a lookup's answer
    }[lookup]
    notify: NotifyHarness = await make_notify(mail_lookup_url=url, lookup_max_tries=3)
    key = await _confirmation(notify, drop_after_data=1)

    await eventually(lambda: _asked_three_times(notify, key), 30)
    await _settled_unknown(notify, key)

    assert len(await notify.mails(key)) == 1
    [incident] = await notify.incidents(key)
    assert incident.kind == "delivery_unknown"
    assert await _audit(notify, key) == []


async def _asked_three_times(notify: NotifyHarness, key: str) -> bool:
    return await _recoveries(notify, key) == [("fired", 1), ("fired", 2), ("fired", 3)]


async def test_a_lookup_that_cannot_tell_is_asked_a_bounded_number_of_times(
    make_notify: Any,
) -> None:
    lookup = FakeMailLookup(LookupAnswer(Verdict.CANNOT_TELL, "the log is full"))
    notify: NotifyHarness = await make_notify(lookup=lookup, lookup_max_tries=2)
    key = await _confirmation(notify, drop_after_data=1)

    await eventually(lambda: _asked_times(notify, key, 2), 30)
    await _settled_unknown(notify, key)

    assert lookup.asked == [(await notify.delivery(key)).message_id] * 2
    assert len(await notify.incidents(key)) == 1


async def _asked_times(notify: NotifyHarness, key: str, times: int) -> bool:
    return [state for state, _ in await _recoveries(notify, key)] == ["fired"] * times


async def test_without_a_lookup_an_unknown_delivery_waits_for_a_person(
    notify: NotifyHarness,
) -> None:
    key = await _confirmation(notify, lose_after_data=1)

    await _settled_unknown(notify, key)

    assert await _recoveries(notify, key) == []
    assert await notify.mails(key) == []
    assert len(await notify.incidents(key)) == 1
    assert (await notify.delivery(key)).tries == 1


async def test_a_delivery_a_stopped_process_left_sending_is_settled_by_the_log(
    make_notify: Any,
) -> None:
    """The process died between marking the delivery `sending` and recording the answer;
    the provider's log has the mail, so it is `sent` and nothing is sent again."""
    lookup = FakeMailLookup(LookupAnswer(Verdict.RECEIVED, "the provider took it"))
    notify: NotifyHarness = await make_notify(start=False, lookup=lookup)
    booking = a_booking()
    record = notify.record("booking.events", booking.booking_id, confirmed(booking))
    delivered = Delivery(
        notify.prefix + "booking.events", 0, 0, record, key=booking.booking_id.encode()
    )
    assert await notify.app.inbox.deliver(delivered) == "processed"
    async with notify.app.deps.uows.transaction() as uow:
        [delivery] = await uow.deliveries.of_subject(booking.booking_id)
        key = delivery.delivery_key
        assert await uow.deliveries.move(key, QUEUED, SENDING, tried=True)

    assert await notify.app.timer_runner.fire_due() == 1  # the send finds it `sending`
    assert await _recoveries(notify, key) == [("pending", 1)]
    assert await notify.app.timer_runner.fire_due() == 1  # the question to the provider

    async with notify.app.deps.uows.transaction() as uow:
        found = await uow.deliveries.get(key)
        incidents = await uow.incidents.listed("open")
    assert found is not None and found.state is DeliveryState.SENT
    assert incidents == []
    assert lookup.asked == [delivery.message_id]
    assert await notify.mails(key) == []
    assert not await notify.sends_pending(key)
