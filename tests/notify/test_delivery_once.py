"""Acceptance a: every event delivered ten times, in any order with the others, yields each
mail once, checked in the mail sandbox by Message-ID. Half the copies are redeliveries of
the same record (the inbox's de-duplication), half a replay under a new event id (only the
delivery's key can tell they are one mail)."""

from __future__ import annotations

import random

from tests.notify.harness import (
    NotifyHarness,
    a_booking,
    activated,
    cancelled,
    confirmed,
    new_id,
    order_paid,
    refunded,
)
from tests.support.waiting import eventually

COPIES = 10


async def test_every_event_delivered_ten_times_in_any_order_yields_each_mail_once(
    notify: NotifyHarness,
) -> None:
    bookings = [a_booking("cs"), a_booking("en"), a_booking("cs")]
    events = []
    for booking in bookings:
        grant_id = new_id()
        notify.issue_pin(booking, grant_id)
        events += [
            ("booking.events", booking.booking_id, confirmed(booking)),
            ("access.events", booking.booking_id, activated(booking, grant_id)),
        ]
    first = bookings[0]
    order_id = new_id()
    events += [
        ("booking.events", first.booking_id, cancelled(first)),
        ("payment.events", first.booking_id, refunded(first, new_id())),
        ("payment.events", order_id, order_paid(order_id, first.email)),
    ]
    records = []
    for topic, key, event in events:
        same = notify.record(topic, key, event)
        records += [(topic, key, same)] * (COPIES // 2)
        records += [(topic, key, notify.record(topic, key, event)) for _ in range(COPIES // 2)]
    random.shuffle(records)
    for topic, key, payload in records:
        await notify.send(topic, key, payload)

    await eventually(notify.all_consumed, 30)
    expected = {
        bookings[0].booking_id: 4,  # confirmed, access, cancelled, refund completed
        bookings[1].booking_id: 2,
        bookings[2].booking_id: 2,
    }
    sent = []
    for booking_id, count in expected.items():
        sent += await notify.deliveries_when(booking_id, count, "sent", within=30)
    [paid] = await notify.deliveries_of(order_id=order_id)
    sent.append(await notify.delivery_in(paid.delivery_key, "sent"))
    for delivery in sent:
        assert not await notify.sends_pending(delivery.delivery_key)
        mails = await notify.mails(delivery.delivery_key)
        assert len(mails) == 1, (delivery.template, len(mails))
        assert mails[0]["rcpt_tos"] == [delivery.recipient]
        assert delivery.tries == 1
    templates = sorted(d.template for d in sent)
    assert templates == sorted(
        ["booking_confirmed"] * 3
        + ["access_details"] * 3
        + ["booking_cancelled", "refund_completed", "order_paid"]
    )
