"""The operators' console in a real browser: a booking's timeline across the four services
with its trace drawn as a waterfall and its audit entries, a failed outbox row replayed (a
reason asked for, the row seen dispatched), slots closed and repriced, no console for anyone
but an operator (the page says they have no access, and shows nothing else), an HTML 404 page
under /web, and no serious accessibility finding on any of these pages in either language
(each page's screenshot lands in .local/artifacts/web as console-<page>-<lang>.png)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from opentelemetry.instrumentation.utils import suppress_instrumentation
from playwright.async_api import Page, expect

from tests.gateway.api import OPS, Api
from tests.observability.journey import booked_paid_and_active
from tests.support.platform import Platform, database
from tests.support.waiting import eventually
from tests.web.conftest import blocking_violations, screenshot

SERVICES = ["booking", "payment", "access", "notify"]
NO_ACCESS = {"en": "You have no access here", "cs": "Sem nemáte přístup"}
NOT_FOUND = {"en": "Page not found", "cs": "Stránka nenalezena"}
SECTIONS = ("outbox", "incidents", "drift", "audit", "spaces", "orgs", "plans")


async def _as(page: Page, user: str) -> None:
    """Signed in as `user` (the development identity the sign-in page stores) before any
    page of the test loads; signing in through its form is test_pages.py's."""
    identity = json.dumps({"kind": "dev", "value": user})
    await page.context.add_init_script(
        f"localStorage.setItem('liftfit.identity', {json.dumps(identity)})"
    )


async def _loaded(page: Page) -> None:
    await expect(page.locator("[data-loading]")).to_be_hidden()


async def _timeline(api: Api, booking_id: str) -> dict[str, Any]:
    answer = await api.call("GET", f"/v1/ops/bookings/{booking_id}/timeline", OPS)
    assert answer.status_code == 200, answer.text
    told: dict[str, Any] = answer.json()
    return told


async def _settled_with_a_whole_trace(api: Api, booking_id: str) -> dict[str, Any]:
    """The timeline once every service knows the booking and Jaeger has spans of several
    services for it: what the page then shows does not depend on how fast they arrive."""
    missing: list[str] = []

    async def ready() -> dict[str, Any] | None:
        told = await _timeline(api, booking_id)
        missing[:] = [name for name in SERVICES if not told["services"][name]["known"]]
        if missing or not told["trace_id"]:
            return None
        trace = await api.call("GET", f"/v1/ops/traces/{told['trace_id']}", OPS)
        services = {s["service"] for s in trace.json().get("spans", [])}
        missing[:] = sorted({"gateway", "booking", "payment", "access"} - services)
        return None if missing else told

    try:
        return await eventually(ready, 60, every=0.5)
    except AssertionError:
        raise AssertionError(f"booking {booking_id} not settled and traced: {missing}") from None


async def _fail_payment_request(platform: Platform, booking_id: str) -> str:
    """The booking's PaymentRequested row as if the broker had refused it (no HTTP call can)."""
    async with database(platform, "booking") as db:
        row = await (
            await db.execute(
                "UPDATE outbox SET state = 'failed', last_error = 'the broker refused it (test)'"
                " WHERE key = %s AND event_type LIKE '%%PaymentRequested' RETURNING effect_id",
                (booking_id,),
            )
        ).fetchone()
    assert row is not None
    return str(row[0])


async def test_an_operator_reads_a_bookings_timeline_trace_and_audit_and_replays_a_failed_row(
    page: Page, api: Api, platform: Platform
) -> None:
    with suppress_instrumentation():  # the test's own calls start no trace of their own
        # With an e-mail address: notify then holds the booking's mails.
        studio, org = await api.studio(1), await api.org(email="console@example.test")
        booking_id = (await booked_paid_and_active(api, org, studio.slot(0)))["booking_id"]
        told = await _settled_with_a_whole_trace(api, booking_id)
    effect_id = await _fail_payment_request(platform, booking_id)
    await _as(page, OPS)

    await page.goto(f"/web/en/console/bookings/{booking_id}")
    cards = page.locator("[data-services] article")
    await expect(cards).to_have_count(4)
    for name in SERVICES:
        card = page.locator(f"[data-services] article[data-service='{name}']")
        await expect(card.get_by_role("heading", level=3)).to_have_text(name)
        await expect(card.locator("dd").first).to_have_text(told["services"][name]["state"])
    await expect(page.locator("[data-trace-id]")).to_have_text(told["trace_id"])
    waterfall = page.locator("[data-waterfall] tbody tr")
    for name in ("gateway", "booking", "payment", "access"):
        await expect(waterfall.and_(page.locator(f"[data-service='{name}']")).first).to_be_visible()
    await expect(waterfall.first.locator("td").nth(3)).to_contain_text(" ms")

    failed = page.locator(f"[data-retry-safe] li[data-effect='{effect_id}']")
    await failed.get_by_role("button", name="Replay…").click()
    await failed.get_by_label("Reason for the replay").fill("broker fixed (browser test)")
    await failed.get_by_role("button", name="Confirm the replay").click()
    await expect(failed.get_by_role("status")).to_have_text(
        "Dispatched (generation 1).", timeout=45_000
    )
    audit = page.locator("[data-audit] tbody tr", has_text="replay_effect")
    await expect(audit).to_have_count(1)
    await expect(audit).to_contain_text(OPS)
    await expect(audit).to_contain_text("broker fixed (browser test)")
    await expect(audit).to_contain_text(effect_id)


async def test_an_operator_closes_and_reprices_slots_and_the_slots_api_answers_so(
    page: Page, api: Api
) -> None:
    studio = await api.studio(2, name=f"Console {uuid.uuid4().hex[:6]}")
    closed, repriced = studio.slot(0), studio.slot(1)
    await _as(page, OPS)
    await page.goto(f"/web/en/console/spaces?space={studio.space_id}")

    closing = page.locator(f"tr[data-slot='{closed}']")
    await closing.get_by_role("button", name="Close").click()
    await expect(page.locator(f"tr[data-slot='{closed}']")).to_have_attribute(
        "data-state", "closed"
    )
    pricing = page.locator(f"tr[data-slot='{repriced}']")
    await pricing.get_by_label("New price in minor units").fill("52000")
    await pricing.get_by_role("button", name="Set price").click()
    await expect(page.locator(f"tr[data-slot='{repriced}'] td").nth(2)).to_contain_text("520")

    listed = await api.call("GET", f"/v1/spaces/{studio.space_id}/slots")
    slots = {slot["slot_id"]: slot for slot in listed.json()}
    assert slots[closed]["state"] == "closed"
    assert slots[repriced]["price"] == {"amount": 52000, "currency": "CZK"}
    assert slots[repriced]["state"] == "available"


@pytest.mark.parametrize("lang", ["en", "cs"])
async def test_a_customer_gets_no_console_and_sees_nothing_of_another_organisation(
    page: Page, api: Api, lang: str
) -> None:
    studio, theirs, mine = await api.studio(1), await api.org(), await api.org()
    booked = await api.book(theirs, studio.slot(0))
    assert booked.status_code == 201, booked.text
    booking_id = booked.json()["booking_id"]
    await _as(page, mine.owner)

    paths = ["", f"bookings/{booking_id}", *SECTIONS]
    for path in paths:
        await page.goto(f"/web/{lang}/console/{path}")
        await _loaded(page)
        await expect(page.get_by_role("heading", level=1)).to_have_text(NO_ACCESS[lang])
        body = page.locator("main")
        await expect(body).not_to_contain_text(booking_id)
        await expect(body).not_to_contain_text(theirs.owner)
        assert await page.locator("main table, main form").count() == 0, path
    await page.goto(f"/web/{lang}/console/")
    await _loaded(page)
    await screenshot(page, f"console-403-{lang}")
    assert await blocking_violations(page) == []
    # Their booking's id under the customers' API is not found for a stranger, in words too.
    stranger = await api.call("GET", f"/v1/orgs/{theirs.org_id}/bookings/{booking_id}", mine.owner)
    assert (stranger.status_code, stranger.json()["code"]) == (404, "not_found")


@pytest.mark.parametrize("lang", ["en", "cs"])
async def test_an_unknown_page_under_web_is_an_html_page_not_json(page: Page, lang: str) -> None:
    for path in (f"/web/{lang}/no-such-page", f"/web/{lang}/console/bookings/not-an-id"):
        answer = await page.goto(path)
        assert answer is not None and answer.status == 404, path
        assert "text/html" in answer.headers["content-type"]
        await expect(page.get_by_role("heading", level=1)).to_have_text(NOT_FOUND[lang])
        await expect(page.locator("html")).to_have_attribute("lang", lang)


@pytest.mark.parametrize("lang", ["cs", "en"])
async def test_every_console_page_and_the_error_pages_have_no_serious_accessibility_violation(
    page: Page, api: Api, lang: str
) -> None:
    studio, org = await api.studio(1, name="Holešovice"), await api.org()
    booked = await api.book(org, studio.slot(0))
    assert booked.status_code == 201, booked.text
    pages = {
        "home": f"/web/{lang}/console/",
        "timeline": f"/web/{lang}/console/bookings/{booked.json()['booking_id']}",
        **{name: f"/web/{lang}/console/{name}" for name in SECTIONS},
    }
    pages["spaces"] += f"?space={studio.space_id}"
    await _as(page, OPS)
    found = {}
    for name, path in pages.items():
        await page.goto(path)
        await _loaded(page)
        await expect(page.get_by_role("alert")).to_be_hidden()  # read without a problem
        await screenshot(page, f"console-{name}-{lang}")
        found[name] = await blocking_violations(page)

    await page.goto(f"/web/{lang}/no-such-page")
    await screenshot(page, f"console-404-{lang}")
    found["404"] = await blocking_violations(page)
    assert found == {name: [] for name in found}
