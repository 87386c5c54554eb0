"""A card booking walked through the gateway to confirmed with its access active: the
journey the trace and the log tests read the traces of."""

from __future__ import annotations

from typing import Any

import httpx

from tests.gateway.api import Api, Org
from tests.support.waiting import eventually

WAIT_S = 60


async def booked_paid_and_active(api: Api, org: Org, slot: str) -> dict[str, Any]:
    """Books `slot` by card, pays on the card sandbox's page and answers the booking once
    it is confirmed with its access active."""
    booked = await api.book(org, slot, mode="card")
    assert booked.status_code == 201, booked.text
    path = f"/v1/orgs/{org.org_id}/bookings/{booked.json()['booking_id']}"

    async def booking() -> dict[str, Any]:
        found = await api.call("GET", path, org.owner)
        assert found.status_code == 200, found.text
        answer: dict[str, Any] = found.json()
        return answer

    async def checkout_url() -> str | None:
        payment = (await booking())["payment"]
        return payment["checkout_url"] if payment else None

    url = await eventually(checkout_url, WAIT_S)
    async with httpx.AsyncClient(timeout=15, follow_redirects=True) as browser:
        paid = await browser.post(url, data={"outcome": "succeed"})
        assert paid.status_code == 200, paid.text

    async def active() -> dict[str, Any] | None:
        found = await booking()
        ok = found["state"] == "confirmed" and (found["access"] or {}).get("state") == "active"
        return found if ok else None

    return await eventually(active, WAIT_S)
