"""The whole journey over HTTP only, on the platform as `make up` starts it: an operator sets
up a studio, slots, an organisation, a member and a plan; the member books by card, pays on
the sandbox's hosted page, sees the booking confirmed and the access active with a PIN for
the slot's window, cancels and sees the refund; buys a pass, pays, books by pass; and the
operator reads the first booking's timeline: all four services, and one trace through them."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.gateway.api import OPS, Api, Org, new_key
from tests.support.platform import Platform
from tests.support.waiting import eventually

WAIT_S = 60


async def _booking(api: Api, org: Org, booking_id: str) -> dict[str, Any]:
    found = await api.call("GET", f"/v1/orgs/{org.org_id}/bookings/{booking_id}", org.owner)
    assert found.status_code == 200, found.text
    answer: dict[str, Any] = found.json()
    return answer


async def _pay(checkout_url: str) -> None:
    """The customer on the sandbox's hosted page: a form post, then the return page."""
    async with httpx.AsyncClient(timeout=15, follow_redirects=True) as browser:
        page = await browser.get(checkout_url)
        assert page.status_code == 200
        paid = await browser.post(checkout_url, data={"outcome": "succeed"})
        assert paid.status_code == 200, paid.text
        assert "/v1/payments/return" in str(paid.url)  # the gateway's page, which only reads


async def test_a_member_books_by_card_pays_gets_a_pin_cancels_is_refunded_and_books_by_pass(
    api: Api, platform: Platform
) -> None:
    studio = await api.studio(2)
    email = f"member-{uuid.uuid4().hex[:8]}@example.test"
    org = await api.org(f"member-{uuid.uuid4().hex[:6]}", email=email)
    code = f"pass-{uuid.uuid4().hex[:8]}"
    plan = {
        "plan_code": code,
        "plan_version": 1,
        "kind": "pass",
        "name": "Ten entries",
        "price": {"amount": 300000, "currency": "CZK"},
        "entries": 10,
        "period_days": 0,
    }
    made = await api.call("POST", "/v1/ops/plans", OPS, plan)
    assert made.status_code == 201, made.text
    assert code in [p["plan_code"] for p in (await api.call("GET", "/v1/plans")).json()]

    booked = await api.book(org, studio.slot(0), mode="card")
    assert booked.status_code == 201, booked.text
    booking_id = booked.json()["booking_id"]
    assert booked.json()["state"] == "pending"

    async def checkout_url() -> str | None:
        payment = (await _booking(api, org, booking_id))["payment"]
        return payment["checkout_url"] if payment else None

    await _pay(await eventually(checkout_url, WAIT_S))

    async def active() -> dict[str, Any] | None:
        booking = await _booking(api, org, booking_id)
        ok = booking["state"] == "confirmed" and (booking["access"] or {}).get("state") == "active"
        return booking if ok else None

    confirmed = await eventually(active, WAIT_S)
    assert confirmed["payment"]["state"] == "paid"
    access = await api.call("GET", f"/v1/orgs/{org.org_id}/bookings/{booking_id}/access", org.owner)
    assert access.status_code == 200, access.text
    shown = access.json()
    assert shown["state"] == "active" and shown["pin"] and shown["pin"].isdigit()
    slot = studio.slots[0]
    assert (shown["valid_from"], shown["valid_to"]) == (slot["starts_at"], slot["ends_at"])

    # The member's e-mail and locale were the booking's contact: the mails went there.
    async with httpx.AsyncClient(base_url=platform.url("MAIL_SANDBOX_HTTP_PORT")) as mail:

        async def confirmation() -> list[dict[str, Any]] | None:
            found: list[dict[str, Any]] = (
                await mail.get("/messages", params={"to": email})
            ).json()["data"]
            return found or None

        mails = await eventually(confirmation, WAIT_S)
    assert all(email in m["to"] for m in mails), mails

    cancel = await api.call(
        "POST", f"/v1/orgs/{org.org_id}/bookings/{booking_id}/cancel", org.owner, {}, new_key()
    )
    assert cancel.status_code == 200, cancel.text
    assert cancel.json()["state"] == "cancelled"

    async def refunded() -> bool:
        payment = (await _booking(api, org, booking_id))["payment"]
        return bool(payment and payment["state"] == "refunded")

    await eventually(refunded, WAIT_S)

    order = await api.call(
        "POST",
        f"/v1/orgs/{org.org_id}/orders",
        org.owner,
        {"plan_code": code, "plan_version": 1},
        new_key(),
    )
    assert order.status_code == 201, order.text
    order_id = order.json()["order_id"]
    assert order.json()["price"] == plan["price"]
    assert isinstance(order.json()["created_at"], str), order.text

    async def order_checkout() -> str | None:
        found = await api.call("GET", f"/v1/orgs/{org.org_id}/orders/{order_id}", org.owner)
        payment = found.json()["payment"]
        return payment["checkout_url"] if payment else None

    await _pay(await eventually(order_checkout, WAIT_S))

    async def balance() -> int | None:
        passes = await api.call("GET", f"/v1/orgs/{org.org_id}/passes", org.owner)
        return int(passes.json()["balance"]) or None

    assert await eventually(balance, WAIT_S) == 10

    by_pass = await api.book(org, studio.slot(1), mode="pass")
    assert by_pass.status_code == 201, by_pass.text
    assert by_pass.json()["state"] == "confirmed"
    assert by_pass.json()["payment"] is None
    passes = (await api.call("GET", f"/v1/orgs/{org.org_id}/passes", org.owner)).json()
    assert passes["balance"] == 9
    assert sorted(e["delta"] for e in passes["entries"]) == [-1, 10]

    # The operator reads the first booking's timeline: all four services, one trace.
    told = await api.call("GET", f"/v1/ops/bookings/{booking_id}/timeline", OPS)
    assert told.status_code == 200, told.text
    timeline = told.json()
    assert timeline["unavailable"] == []
    sides = timeline["services"]
    assert sorted(sides) == ["access", "booking", "notify", "payment"]
    assert all(side["known"] for side in sides.values()), sides
    assert sides["booking"]["state"] == "cancelled"
    assert sides["payment"]["state"] == "refunded"
    assert confirmed["trace_id"] and timeline["trace_id"] == confirmed["trace_id"]
    assert {side["trace_id"] for side in sides.values()} == {confirmed["trace_id"]}
    assert timeline["one_trace"] is True
