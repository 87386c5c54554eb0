"""The five-minute tour on the demo data `make up` creates (gateway_bff.demo), as a first
visitor takes it, with no operator call: the studios list a studio, its page opens on a day
with free slots, a card booking is paid on the sandbox's page and shows its PIN.

On a platform of its own, as a fresh clone has it right after `make up`: on the suites'
shared platform other tests change the demo's data (Schemathesis reuses the ids and names
it reads in answers: after it, a studio of the demo's name with no slots was listed first,
and a booking of the demo's first free slot showed no PIN within 30 s)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from gateway_bff.demo import MEMBER
from tests.support.infrastructure import Infrastructure
from tests.support.platform import Platform, started_platform
from tests.web.test_pages import _sign_in

WAIT_MS = 30_000


@pytest.fixture(scope="module")
async def platform(
    infra: Infrastructure, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Platform]:
    state: Path = tmp_path_factory.mktemp("tour") / "state"
    async with started_platform(infra, state) as started:
        yield started


STUDIO = "Demo studio"  # gateway_bff.demo's name for its studio


async def _demo_studio_with_free_slots(page: Page) -> str:
    studios = await (await page.request.get("/v1/spaces")).json()
    for studio in studios:
        if studio["name"] != STUDIO:
            continue
        now = datetime.now(UTC)
        window: dict[str, str | float | bool] = {
            "from": _iso(now),
            "to": _iso(now + timedelta(days=31)),
        }  # as the page asks
        slots = await page.request.get(f"/v1/spaces/{studio['space_id']}/slots", params=window)
        if any(slot["state"] == "available" for slot in await slots.json()):
            return str(studio["space_id"])
    raise AssertionError(f"no studio named {STUDIO!r} with a free slot among {studios}")


async def _booking_paid_by(page: Page, payment_id: str) -> str:
    """The demo member's booking that this payment paid for (the organisation may hold
    others: tests share the platform)."""
    member = {"X-Dev-User": MEMBER}
    me = await (await page.request.get("/v1/me", headers=member)).json()
    for membership in me["memberships"]:
        path = f"/v1/orgs/{membership['org_id']}/bookings"
        for booking in await (await page.request.get(path, headers=member)).json():
            if (booking.get("payment") or {}).get("payment_id") == payment_id:
                return str(booking["booking_id"])
    raise AssertionError(f"no booking of {MEMBER!r} paid by {payment_id}")


def _iso(when: datetime) -> str:
    return when.isoformat().replace("+00:00", "Z")


async def test_a_first_visitor_books_a_demo_slot_by_card_and_sees_its_pin(page: Page) -> None:
    await page.goto("/", wait_until="load")
    await expect(page).to_have_url(re.compile(r"/web/(en|cs)/$"))
    await _sign_in(page, "en", MEMBER, lands_in="cs")  # the demo member's own language
    await page.goto("/web/en/")
    # The demo's studio, as a visitor tells it: by its name, and free slots to book.
    space_id = await _demo_studio_with_free_slots(page)
    await page.locator(f"a[href$='/spaces/{space_id}']").first.click()
    await expect(page).to_have_url(re.compile(r"/web/en/spaces/[0-9a-f-]{36}\?day="))

    free = page.locator("tr[data-slot]", has=page.locator("[data-state='available']")).first
    await expect(free).to_be_visible()  # the page opened on a day with a free slot
    await free.get_by_role("button", name="Book and pay by card").click()
    await page.get_by_role("button", name="Pay", exact=True).click()  # the card sandbox's page
    await page.wait_for_url(re.compile(r"/v1/payments/return\?payment_id="))
    live = page.locator("[data-live]")
    await expect(live).to_have_text("Done: your booking is confirmed.", timeout=WAIT_MS)

    booking_id = await _booking_paid_by(page, page.url.split("payment_id=", 1)[1])
    await page.get_by_role("link", name="My bookings").first.click()
    card = page.locator(f"article[data-booking='{booking_id}']")
    await expect(card.locator("[data-field='payment']")).to_have_text("Paid")
    await card.get_by_role("button", name="Show PIN").click(timeout=WAIT_MS)
    await expect(card.locator("[data-pin]")).to_have_text(re.compile(r"^PIN: \d{4,8}, valid from"))
