"""The console tells the truth: once a card booking is confirmed, the release of its unpaid
hold can no longer act, so the booking's timeline stops naming the booking service as a step
it waits on, long before the hold (15 minutes) would have run out; a cancelled pending
booking too. (The access service's timers for the PIN's window are real work ahead.)"""

from __future__ import annotations

import uuid
from typing import Any

from tests.gateway.api import OPS, Api, Org
from tests.gateway.test_journey import WAIT_S, _booking, _pay
from tests.support.waiting import eventually

RELEASE = "release_unpaid_hold"


async def _timeline(api: Api, booking_id: str) -> dict[str, Any]:
    told = await api.call("GET", f"/v1/ops/bookings/{booking_id}/timeline", OPS)
    assert told.status_code == 200, told.text
    answer: dict[str, Any] = told.json()
    return answer


def _release_pending(told: dict[str, Any]) -> bool:
    effects = told["services"]["booking"].get("pending_effects", [])
    return any(effect.get("name") == RELEASE for effect in effects)


async def _moved_on(api: Api, booking_id: str, state: str) -> dict[str, Any]:
    """The timeline once the booking service has the booking in `state` and waits on
    nothing of its own."""
    last: list[dict[str, Any]] = []

    async def moved_on() -> dict[str, Any] | None:
        told = await _timeline(api, booking_id)
        last[:] = [told]
        booking = told["services"]["booking"]
        done = booking["state"] == state and "booking" not in told["waiting_on"]
        return told if done else None

    try:
        return await eventually(moved_on, WAIT_S)
    except AssertionError as error:
        raise AssertionError(f"still waiting; last timeline: {last}") from error


async def _card_booking(api: Api) -> tuple[Org, str]:
    studio = await api.studio(1)
    org = await api.org(f"truth-{uuid.uuid4().hex[:6]}")
    booked = await api.book(org, studio.slot(0), mode="card")
    assert booked.status_code == 201, booked.text
    booking_id = str(booked.json()["booking_id"])
    assert _release_pending(await _timeline(api, booking_id))  # the hold is what it waits on
    return org, booking_id


async def test_a_card_booking_confirmed_before_its_hold_ends_waits_on_no_booking_step(
    api: Api,
) -> None:
    org, booking_id = await _card_booking(api)

    async def checkout_url() -> str | None:
        payment = (await _booking(api, org, booking_id))["payment"]
        return payment["checkout_url"] if payment else None

    await _pay(await eventually(checkout_url, WAIT_S))
    told = await _moved_on(api, booking_id, "confirmed")
    assert not _release_pending(told)
    assert not told["services"]["booking"]["failed_effects"]


async def test_a_pending_booking_cancelled_waits_on_no_booking_step(api: Api) -> None:
    org, booking_id = await _card_booking(api)
    cancelled = await api.call(
        "POST",
        f"/v1/orgs/{org.org_id}/bookings/{booking_id}/cancel",
        org.owner,
        {},
        f"k-{uuid.uuid4().hex}",
    )
    assert cancelled.status_code == 200, cancelled.text
    told = await _moved_on(api, booking_id, "cancelled")
    assert not _release_pending(told)
