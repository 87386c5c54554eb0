"""Acceptance e: every mail renders in both locales, text and HTML, with the amounts
formatted for the locale and the times in the studio's time zone. Templates are strict: a
value a template names and the delivery lacks is an error here, in the test suite, not in a
customer's mail at night."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

import pytest
from liftfit.booking.v1 import events_pb2 as bev

from servicekit.records import Delivery
from services.notify.adapters.mail_templates import MailTemplates, RenderError
from services.notify.domain.model import Template
from tests.notify.harness import NotifyHarness, a_booking, confirmed, new_id
from tests.support.waiting import eventually

NBSP, NNBSP = "\u00a0", "\u202f"
# 16:00 UTC: 17:00 in Prague in January (CET), 18:00 in July (CEST).
WINTER, SUMMER = "2030-01-15T16:00:00+00:00", "2030-07-15T16:00:00+00:00"
VALUES: dict[Template, dict[str, Any]] = {
    Template.BOOKING_CONFIRMED: {
        "booking_id": "b-1",
        "starts_at": WINTER,
        "ends_at": "2030-01-15T17:00:00+00:00",
        "timezone": "Europe/Prague",
        "amount": 123450,
        "currency": "CZK",
    },
    Template.ACCESS_DETAILS: {
        "booking_id": "b-1",
        "grant_id": "g-1",
        "timezone": "Europe/Prague",
        "pin": "48213907",
        "valid_from": SUMMER,
        "valid_to": "2030-07-15T17:00:00+00:00",
    },
    Template.BOOKING_CANCELLED: {
        "booking_id": "b-1",
        "starts_at": WINTER,
        "ends_at": "2030-01-15T17:00:00+00:00",
        "timezone": "Europe/Prague",
        "refund_due": True,
    },
    Template.REFUND_COMPLETED: {"booking_id": "b-1", "amount": 123450, "currency": "CZK"},
    Template.ORDER_PAID: {"order_id": "o-1", "amount": 99000, "currency": "EUR"},
}
EXPECTED: dict[tuple[Template, str], list[str]] = {
    (Template.BOOKING_CONFIRMED, "cs"): ["15. ledna 2030 17:00", "18:00", f"1{NBSP}234,50{NBSP}Kč"],
    (Template.BOOKING_CONFIRMED, "en"): [
        f"January 15, 2030 5:00{NNBSP}PM",
        f"6:00{NNBSP}PM",
        "CZK1,234.50",
    ],
    (Template.ACCESS_DETAILS, "cs"): ["48213907", "15. července 2030 18:00", "19:00"],
    (Template.ACCESS_DETAILS, "en"): ["48213907", f"July 15, 2030 6:00{NNBSP}PM", f"7:00{NNBSP}PM"],
    (Template.BOOKING_CANCELLED, "cs"): ["15. ledna 2030 17:00", "vrátíme"],
    (Template.BOOKING_CANCELLED, "en"): [f"January 15, 2030 5:00{NNBSP}PM", "refund"],
    (Template.REFUND_COMPLETED, "cs"): [f"1{NBSP}234,50{NBSP}Kč", "b-1"],
    (Template.REFUND_COMPLETED, "en"): ["CZK1,234.50", "b-1"],
    (Template.ORDER_PAID, "cs"): [f"990,00{NBSP}€", "o-1"],
    (Template.ORDER_PAID, "en"): ["€990.00", "o-1"],
}


@pytest.mark.parametrize("template", list(Template))
@pytest.mark.parametrize("locale", ["cs", "en"])
def test_every_mail_renders_in_both_locales_with_amounts_and_studio_times(
    template: Template, locale: str
) -> None:
    rendered = MailTemplates().render(template, locale, VALUES[template])
    assert rendered.subject and "\n" not in rendered.subject
    html = rendered.html.replace("&nbsp;", NBSP)
    for shown in EXPECTED[(template, locale)]:
        assert shown in rendered.text, (shown, rendered.text)
        assert shown in html, (shown, rendered.html)
    assert f'<html lang="{locale}">' in rendered.html


@pytest.mark.parametrize("template", list(Template))
def test_a_template_naming_a_value_the_mail_lacks_is_an_error(template: Template) -> None:
    values = dict(VALUES[template])
    values.pop("booking_id", None) or values.pop("order_id")
    with pytest.raises(RenderError):
        MailTemplates().render(template, "cs", values)


def test_values_are_escaped_in_html_and_not_in_text() -> None:
    values = {**VALUES[Template.REFUND_COMPLETED], "booking_id": "<b>x</b>"}
    rendered = MailTemplates().render(Template.REFUND_COMPLETED, "en", values)
    assert "&lt;b&gt;x&lt;/b&gt;" in rendered.html and "<b>x</b>" not in rendered.html
    assert "<b>x</b>" in rendered.text


async def test_a_studio_in_another_time_zone_gets_its_own_times(make_notify: Any) -> None:
    booking = a_booking("en")
    notify: NotifyHarness = await make_notify(
        space_timezones={booking.space_id: "America/New_York"}
    )
    await notify.publish("booking.events", booking.booking_id, confirmed(booking))
    [delivery] = await eventually(lambda: _sent(notify, booking.booking_id), 15)
    [mail] = await notify.mails(delivery)
    starts = booking.starts_at.astimezone(ZoneInfo("America/New_York"))
    shown = f"{starts.hour % 12 or 12}:00{NNBSP}{'AM' if starts.hour < 12 else 'PM'}"
    assert shown in mail["text"] and "America/New_York" in mail["text"]


async def test_a_studio_booking_announced_gets_its_own_times_over_the_configured_zone(
    make_notify: Any,
) -> None:
    booking = a_booking("en")
    notify: NotifyHarness = await make_notify(
        space_timezones={booking.space_id: "America/New_York"}
    )
    studio = bev.SpaceCreated(space_id=booking.space_id, name="Shibuya", timezone="Asia/Tokyo")
    await notify.publish("booking.events", booking.space_id, studio)
    await eventually(notify.all_consumed, 15)
    await notify.publish("booking.events", booking.booking_id, confirmed(booking))
    [delivery] = await eventually(lambda: _sent(notify, booking.booking_id), 15)
    [mail] = await notify.mails(delivery)
    starts = booking.starts_at.astimezone(ZoneInfo("Asia/Tokyo"))
    shown = f"{starts.hour % 12 or 12}:00{NNBSP}{'AM' if starts.hour < 12 else 'PM'}"
    assert shown in mail["text"] and "Asia/Tokyo" in mail["text"]


async def test_a_studio_with_a_zone_the_tz_database_does_not_know_is_parked(
    make_notify: Any,
) -> None:
    notify: NotifyHarness = await make_notify(start=False)
    studio = bev.SpaceCreated(space_id=new_id(), name="Nowhere", timezone="Mars/Olympus")
    record = notify.record("booking.events", studio.space_id, studio)
    topic = notify.app.settings.topic("booking.events")
    delivery = Delivery(topic, 0, 1, record, key=studio.space_id.encode())
    assert await notify.app.inbox.deliver(delivery) == "parked"


async def _sent(notify: NotifyHarness, booking_id: str) -> list[str] | None:
    found = await notify.deliveries_of(booking_id)
    return [d.delivery_key for d in found] if found and found[0].state == "sent" else None
