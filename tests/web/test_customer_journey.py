"""The customer's journey in a real browser on the real platform: booking by card through the
card sandbox's page and back to a return page that follows the booking without a reload, the
PIN shown in its window, cancelling with the refund in words and the slot closed for others
until the lock confirms the revocation; one booking whatever the clicks and reloads; a pass
pack bought and spent, a booking moved, a refusal said in a sentence; and no serious
accessibility finding on the customer's pages in either language (with their screenshots)."""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Page, Route, expect

from tests.gateway.api import OPS, Api, Org, Studio, new_key
from tests.support.platform import Platform
from tests.support.sandboxes import SandboxAuth
from tests.support.waiting import eventually
from tests.web.conftest import blocking_violations, screenshot
from tests.web.days import first_day, local
from tests.web.test_pages import _a_member_on_a_studios_first_day, _sign_in

WAIT_S = 30.0
EN_DASH = "\u2013"


def _slot_row(page: Page, slot_id: str) -> Any:
    return page.locator(f"tr[data-slot='{slot_id}']")


def _card(page: Page, booking_id: str) -> Any:
    return page.locator(f"article[data-booking='{booking_id}']")


@contextlib.asynccontextmanager
async def _faults(
    base_url: str, held: dict[str, Any], released: dict[str, Any]
) -> AsyncIterator[httpx.AsyncClient]:
    """A sandbox's faults for the block, set back to `released` whatever happens."""
    async with httpx.AsyncClient(base_url=base_url, auth=SandboxAuth(), timeout=10) as sandbox:
        (await sandbox.post("/_sandbox/faults", json=held)).raise_for_status()
        try:
            yield sandbox
        finally:
            (await sandbox.post("/_sandbox/faults", json=released)).raise_for_status()


async def _bookings(api: Api, org: Org) -> list[dict[str, Any]]:
    listed = await api.call("GET", f"/v1/orgs/{org.org_id}/bookings", org.owner)
    assert listed.status_code == 200, listed.text
    found: list[dict[str, Any]] = listed.json()
    return found


async def _book_by_card_and_pay(page: Page, platform: Platform, studio: Studio) -> None:
    """Slots page, "book", the sandbox's page, "Pay": the browser lands on the return page
    while the booking is still pending (the sandbox's notice is held back a little)."""
    day, _ = first_day(studio)
    await page.goto(f"/web/en/spaces/{studio.space_id}?day={day}")
    book = _slot_row(page, studio.slot(0)).get_by_role("button", name="Book and pay by card")
    card = platform.url("CARD_GATEWAY_PORT")
    async with _faults(card, {"delay_notifications_ms": 1500}, {"delay_notifications_ms": 0}):
        await book.click()
        await page.get_by_role("button", name="Pay", exact=True).click()
        await page.wait_for_url(re.compile(r"/v1/payments/return\?payment_id="))
        await page.evaluate("window.__marker = 'landed'")
        live = page.locator("[data-live]")
        await expect(live).to_have_text(
            "The booking is waiting for the payment to be confirmed…", timeout=WAIT_S * 1000
        )
    await expect(live).to_have_text("Done: your booking is confirmed.", timeout=WAIT_S * 1000)
    assert await page.evaluate("window.__marker") == "landed"  # no reload, no navigation


async def _pin_is_shown_in_its_window(page: Page, api: Api, org: Org, studio: Studio) -> str:
    await page.get_by_role("link", name="My bookings").first.click()
    (booking,) = await _bookings(api, org)
    card = _card(page, booking["booking_id"])
    await expect(card.locator("[data-field='payment']")).to_have_text("Paid")
    await card.get_by_role("button", name="Show PIN").click(timeout=WAIT_S * 1000)
    starts, ends = (local(str(studio.slots[0][edge])) for edge in ("starts_at", "ends_at"))
    window = rf"valid from .*{starts:%H:%M} to .*{ends:%H:%M}$"
    await expect(card.locator("[data-pin]")).to_have_text(re.compile(rf"^PIN: \d{{4,8}}, {window}"))
    access = await api.call(
        "GET", f"/v1/orgs/{org.org_id}/bookings/{booking['booking_id']}/access", org.owner
    )
    await expect(card.locator("[data-pin]")).to_contain_text(f"PIN: {access.json()['pin']},")
    return str(booking["booking_id"])


async def _cancel_and_see_the_refund(page: Page, platform: Platform, booking_id: str) -> None:
    card = _card(page, booking_id)
    payment = card.locator("[data-field='payment']")
    # The card sandbox refuses the first refund calls, so the refund stays pending a while.
    refunds = platform.url("CARD_GATEWAY_PORT")
    async with _faults(refunds, {"fail_next_calls": 3}, {"fail_next_calls": 0}):
        await card.get_by_role("button", name="Cancel booking").click()
        await expect(card.get_by_text("Cancel this booking?")).to_be_focused()
        await card.get_by_role("button", name="Yes, cancel").click()
        await expect(card.locator("[data-said]")).to_have_text(
            re.compile("^The booking is cancelled. We are refunding the card")
        )
        await expect(card.locator("[data-field='state']")).to_have_text("Cancelled")
        await expect(payment).to_have_text("Refund on its way", timeout=WAIT_S * 1000)
    await expect(payment).to_have_text("Refunded", timeout=WAIT_S * 1000)


async def _slot_state_seen(page: Page, slot_id: str) -> str:
    await page.reload()
    badge = _slot_row(page, slot_id).locator("[data-state]")
    await expect(badge).to_be_visible()
    return str(await badge.get_attribute("data-state"))


async def test_a_customer_books_by_card_gets_the_pin_cancels_and_the_slot_reopens_after_revocation(
    page: Page, browser: Browser, api: Api, platform: Platform
) -> None:
    studio = await api.studio(slots=2, timezone="Europe/Prague")  # the first within the PIN's lead
    org, other = await api.org(), await api.org()
    await _sign_in(page, "en", org.owner)

    await _book_by_card_and_pay(page, platform, studio)
    booking_id = await _pin_is_shown_in_its_window(page, api, org, studio)

    lock = platform.url("LOCK_PROVIDER_PORT")
    # The lock is slow to let go of the code: the revocation is held until its clock moves on.
    async with _faults(lock, {"removing_delay_ms": 30_000}, {"removing_delay_ms": 0}) as sandbox:
        await _cancel_and_see_the_refund(page, platform, booking_id)
        day, _ = first_day(studio)
        context = await browser.new_context(base_url=platform.gateway, locale="en-GB")
        try:
            other_page = await context.new_page()
            await _sign_in(other_page, "en", other.owner)
            await other_page.goto(f"/web/en/spaces/{studio.space_id}?day={day}")
            assert await _slot_state_seen(other_page, studio.slot(0)) == "closed"
            try:
                (
                    await sandbox.post("/_sandbox/clock", json={"offset_seconds": 60})
                ).raise_for_status()

                async def reopened() -> bool:
                    state = await _slot_state_seen(other_page, studio.slot(0))
                    assert state in ("closed", "available"), state
                    return state == "available"

                await eventually(reopened, WAIT_S, every=0.5)
            finally:
                # Back to real time: the sandbox then shows the code leaving for the rest of
                # its delay; the access service has its confirmation and never asks again.
                (
                    await sandbox.post("/_sandbox/clock", json={"offset_seconds": 0})
                ).raise_for_status()
            row = _slot_row(other_page, studio.slot(0))
            await expect(row.locator("[data-state]")).to_have_text("Available")
        finally:
            await context.close()


async def test_a_double_click_a_lost_answer_and_a_reload_during_checkout_leave_one_booking(
    page: Page, api: Api
) -> None:
    studio, org = await _a_member_on_a_studios_first_day(page, api)

    keys: list[str] = []
    lost: list[str] = []

    async def lose_the_first_answer(route: Route) -> None:
        keys.append(route.request.headers.get("idempotency-key", ""))
        if lost:
            await route.continue_()
            return
        lost.append("booked")
        await route.fetch()  # the gateway makes the booking; its answer never comes back
        await route.abort("connectionreset")

    await page.route(f"**/v1/orgs/{org.org_id}/bookings", lose_the_first_answer)
    book = _slot_row(page, studio.slot(0)).get_by_role("button", name="Book and pay by card")
    await book.dblclick()
    await expect(page.get_by_role("alert")).to_have_text(
        "We could not reach the server. Check your connection and try again."
    )
    await book.click()  # the same intent again: the same key, the same booking
    await page.wait_for_url(lambda url: "/web/" not in url)
    checkout = page.url
    await page.reload()  # during checkout, on the card sandbox's page
    await expect(page.get_by_role("button", name="Pay", exact=True)).to_be_visible()

    assert len(keys) == 2 and len(set(keys)) == 1, keys
    bookings = await _bookings(api, org)
    assert [b["slot"]["slot_id"] for b in bookings] == [studio.slot(0)]
    assert bookings[0]["payment"]["checkout_url"] == checkout == page.url
    # Left half-way, the checkout goes on from my bookings, on the same payment.
    await page.goto("/web/en/bookings")
    pay = _card(page, bookings[0]["booking_id"]).get_by_role("link", name="Pay by card")
    await expect(pay).to_have_attribute("href", checkout)


async def _pass_plan(api: Api) -> dict[str, Any]:
    plan = {
        "plan_code": f"pass-{uuid.uuid4().hex[:8]}",
        "plan_version": 1,
        "kind": "pass",
        "name": f"Ten entries {uuid.uuid4().hex[:4]}",
        "price": {"amount": 300000, "currency": "CZK"},
        "entries": 10,
        "period_days": 0,
    }
    made = await api.call("POST", "/v1/ops/plans", OPS, plan)
    assert made.status_code == 201, made.text
    return plan


def _plan_item(page: Page, plan: dict[str, Any]) -> Any:
    return page.locator(f"li[data-plan='{plan['plan_code']}:1']")


async def test_a_member_buys_a_pass_pack_books_with_it_and_moves_the_booking(
    page: Page, api: Api
) -> None:
    studio, org = await _a_member_on_a_studios_first_day(page, api, slots=3)
    plan = await _pass_plan(api)
    day, _ = first_day(studio)
    with_pass = _slot_row(page, studio.slot(0)).get_by_role("button", name="Book with a pass")
    await with_pass.click()
    await expect(page.get_by_role("alert")).to_have_text(
        "Your organisation's pass has no entry left."
    )

    await page.goto("/web/en/passes")
    await expect(page.locator("[data-balance]")).to_have_text("0")
    await _plan_item(page, plan).get_by_role("button").click()
    await page.get_by_role("button", name="Pay", exact=True).click()
    await expect(page.locator("[data-live]")).to_have_text(
        "Done: the payment arrived and the entries are on your pass.", timeout=WAIT_S * 1000
    )
    await page.get_by_role("link", name="Passes").last.click()
    await expect(page.locator("[data-balance]")).to_have_text("10")
    await expect(page.locator("[data-ledger] tbody tr")).to_have_text(
        [re.compile(r"\+10\s*Pass bought")]
    )

    await page.goto(f"/web/en/spaces/{studio.space_id}?day={day}")
    await with_pass.click()
    await expect(page.locator("[data-booking-status]")).to_contain_text("Booked with a pass")
    await expect(_slot_row(page, studio.slot(0)).locator("[data-state]")).to_have_text("Booked")

    await page.goto("/web/en/bookings")
    (booking,) = await _bookings(api, org)
    card = _card(page, booking["booking_id"])
    await expect(card.locator("[data-field='payment']")).to_have_text("Paid with a pass")
    await card.get_by_role("button", name="Move").click()
    target = studio.slots[2]
    starts = local(str(target["starts_at"]))
    await card.get_by_label("New slot").select_option(str(target["slot_id"]))
    await card.get_by_role("button", name="Move here").click()
    await expect(card.locator("[data-said]")).to_contain_text("moved to")
    await expect(card.locator("[data-said]")).to_contain_text(f"{starts:%H:%M}{EN_DASH}")
    (moved,) = await _bookings(api, org)
    assert moved["slot"]["slot_id"] == target["slot_id"] and moved["state"] == "confirmed"


async def _paid_pass_order(api: Api, org: Org, plan: dict[str, Any]) -> str:
    """A pass pack bought and paid on the sandbox's page (as a browser would); its payment."""
    path = f"/v1/orgs/{org.org_id}/orders"
    made = await api.call(
        "POST", path, org.owner, {"plan_code": plan["plan_code"], "plan_version": 1}, new_key()
    )
    assert made.status_code == 201, made.text
    order_id = made.json()["order_id"]

    async def order(state: str | None = None) -> dict[str, Any] | None:
        found: dict[str, Any] = (await api.call("GET", f"{path}/{order_id}", org.owner)).json()
        payment = found.get("payment") or {}
        ready = found["state"] == state if state else bool(payment.get("checkout_url"))
        return found if ready else None

    checkout = (await eventually(order, WAIT_S))["payment"]["checkout_url"]
    async with httpx.AsyncClient(timeout=15) as browser:
        paying = await browser.post(checkout, data={"outcome": "succeed"})
        assert paying.status_code == 303, paying.text  # back to the return page
    paid = await eventually(lambda: order("paid"), WAIT_S)

    async def credited() -> bool:
        passes = await api.call("GET", f"/v1/orgs/{org.org_id}/passes", org.owner)
        return bool(passes.json()["balance"])

    await eventually(credited, WAIT_S)
    return str(paid["payment"]["payment_id"])


async def _active_pass_booking(api: Api, org: Org, studio: Studio) -> str:
    booked = await api.book(org, studio.slot(0), mode="pass")
    assert booked.status_code == 201, booked.text
    booking_id = str(booked.json()["booking_id"])

    async def active() -> bool:
        found = (await _bookings(api, org))[0]
        return (found.get("access") or {}).get("state") == "active"

    await eventually(active, WAIT_S)
    return booking_id


@pytest.mark.parametrize("lang", ["cs", "en"])
async def test_the_customers_pages_have_no_serious_accessibility_violation(
    page: Page, api: Api, lang: str
) -> None:
    words = {
        "cs": ("Zobrazit PIN", "Zrušit rezervaci", "Ne, ponechat"),
        "en": ("Show PIN", "Cancel booking", "No, keep it"),
    }[lang]
    studio = await api.studio(slots=1, timezone="Europe/Prague")
    org = await api.org()
    payment_id = await _paid_pass_order(api, org, await _pass_plan(api))
    booking_id = await _active_pass_booking(api, org, studio)
    await _sign_in(page, lang, org.owner, lands_in="en")  # the member's own locale
    found = {}

    await page.goto(f"/web/{lang}/payments/return?payment_id={payment_id}")
    await expect(page.locator("[data-live]")).to_have_attribute("data-state", "paid")
    found["return"] = await _checked(page, f"return-{lang}")

    await page.goto(f"/web/{lang}/bookings")
    card = _card(page, booking_id)
    await card.get_by_role("button", name=words[0]).click()
    await expect(card.locator("[data-pin]")).to_contain_text("PIN: ")
    found["bookings"] = await _checked(page, f"bookings-{lang}")
    await card.get_by_role("button", name=words[1]).click()
    await expect(card.get_by_role("button", name=words[2])).to_be_visible()
    found["bookings-cancel"] = await _checked(page, f"bookings-cancel-{lang}")
    await page.set_viewport_size({"width": 390, "height": 844})  # a phone
    found["bookings-phone"] = await _checked(page, f"bookings-phone-{lang}")

    await page.goto(f"/web/{lang}/passes")
    await expect(page.locator("[data-balance]")).to_have_text("9")
    found["passes"] = await _checked(page, f"passes-{lang}")
    assert found == {name: [] for name in found}


async def _checked(page: Page, name: str) -> list[dict[str, Any]]:
    """The page as it is now, loaded: its screenshot, and axe-core's blocking findings."""
    loading = page.locator("[data-loading]")
    if await loading.count():
        await expect(loading).to_be_hidden()
    await screenshot(page, name)
    return await blocking_violations(page)


async def test_a_member_of_two_organisations_chooses_one_and_the_pages_remember_it(
    page: Page, api: Api
) -> None:
    user = f"user-{uuid.uuid4().hex[:8]}"
    await api.org(user)  # the oldest membership, chosen until the member chooses
    second = await api.org(user)
    studio = await api.studio(slots=1, timezone="Europe/Prague")
    booked = await api.book(second, studio.slot(0))
    assert booked.status_code == 201, booked.text
    await _sign_in(page, "en", user)

    await page.goto("/web/en/bookings")
    await expect(page.get_by_text("Your organisation has no booking yet.")).to_be_visible()
    await page.get_by_label("Organisation").select_option(second.org_id)
    await expect(_card(page, booked.json()["booking_id"])).to_be_visible()
    await page.goto("/web/en/passes")  # another page: the same organisation
    await expect(page.get_by_label("Organisation")).to_have_value(second.org_id)
