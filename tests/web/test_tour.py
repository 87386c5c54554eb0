"""The five-minute tour on the demo data `make up` creates (gateway_bff.demo), as a first
visitor takes it, with no operator call: the studios list a studio, its page opens on a day
with free slots, a card booking is paid on the sandbox's page and shows its PIN."""

from __future__ import annotations

import re

from playwright.async_api import Page, expect

from gateway_bff.demo import MEMBER
from tests.web.test_pages import _sign_in

WAIT_MS = 30_000


async def test_a_first_visitor_books_a_demo_slot_by_card_and_sees_its_pin(page: Page) -> None:
    await page.goto("/", wait_until="load")
    await expect(page).to_have_url(re.compile(r"/web/(en|cs)/$"))
    await _sign_in(page, "en", MEMBER, lands_in="cs")  # the demo member's own language
    await page.goto("/web/en/")
    # Any demo studio will do: a test may have run the demo set-up against this platform too.
    await page.get_by_role("link", name="Demo studio").first.click()
    await expect(page).to_have_url(re.compile(r"/web/en/spaces/[0-9a-f-]{36}\?day="))

    free = page.locator("tr[data-slot]", has=page.locator("[data-state='available']")).first
    await expect(free).to_be_visible()  # the page opened on a day with a free slot
    await free.get_by_role("button", name="Book and pay by card").click()
    await page.get_by_role("button", name="Pay", exact=True).click()  # the card sandbox's page
    await page.wait_for_url(re.compile(r"/v1/payments/return\?payment_id="))
    live = page.locator("[data-live]")
    await expect(live).to_have_text("Done: your booking is confirmed.", timeout=WAIT_MS)

    await page.get_by_role("link", name="My bookings").first.click()
    card = page.locator("article[data-booking]").first
    await expect(card.locator("[data-field='payment']")).to_have_text("Paid")
    await card.get_by_role("button", name="Show PIN").click(timeout=WAIT_MS)
    await expect(card.locator("[data-pin]")).to_have_text(re.compile(r"^PIN: \d{4,8}, valid from"))
