"""The customers' pages in a real browser: signing in, a studio's slots by day in the
studio's local time, every API problem as a sentence, and no serious accessibility finding
on any page in either language (each page's screenshot lands in .local/artifacts/web)."""

from __future__ import annotations

import uuid

import pytest
from playwright.async_api import Page, expect

from tests.gateway.api import OPS, Api, Org, Studio
from tests.web.conftest import blocking_violations, screenshot
from tests.web.days import first_day, local

BOOK = {"en": "Book and pay by card", "cs": "Rezervovat a zaplatit kartou"}
EN_DASH = "\u2013"  # between a slot's start and end
STATE_WORDS = {
    "en": {"available": "Available", "held": "Held"},
    "cs": {"available": "Volno", "held": "Drženo"},
}


async def _sign_in(page: Page, lang: str, user: str, lands_in: str | None = None) -> None:
    await page.goto(f"/web/{lang}/signin")
    await page.get_by_label("User name" if lang == "en" else "Jméno uživatele").fill(user)
    await page.get_by_role("button", name="Sign in" if lang == "en" else "Přihlásit se").click()
    await expect(page).to_have_url(f"/web/{lands_in or lang}/")
    await expect(page.locator("[data-user]")).to_have_text(user)


async def _a_member_on_a_studios_first_day(
    page: Page, api: Api, slots: int = 2
) -> tuple[Studio, Org]:
    """A new organisation's owner, signed in, on a new studio's slots page (in English)."""
    studio = await api.studio(slots=slots, timezone="Europe/Prague")
    org = await api.org()
    day, _ = first_day(studio)
    await _sign_in(page, "en", org.owner)
    await page.goto(f"/web/en/spaces/{studio.space_id}?day={day}")
    return studio, org


async def _slot_rows_say(page: Page, lang: str, slots: list[dict[str, object]], held: str) -> None:
    rows = page.locator("tr[data-slot]")
    await expect(rows).to_have_count(len(slots))
    for slot in slots:
        row = page.locator(f"tr[data-slot='{slot['slot_id']}']")
        starts, ends = local(str(slot["starts_at"])), local(str(slot["ends_at"]))
        await expect(row.locator("td").first).to_have_text(f"{starts:%H:%M}{EN_DASH}{ends:%H:%M}")
        state = "held" if slot["slot_id"] == held else "available"
        await expect(row.locator("[data-state]")).to_have_text(STATE_WORDS[lang][state])
        await expect(row.locator("td").nth(2)).to_contain_text("450")


async def test_a_member_signs_in_and_sees_a_studios_slots_by_day_in_both_languages(
    page: Page, api: Api
) -> None:
    studio = await api.studio(slots=3, timezone="Europe/Prague", name="Karlín")
    org = await api.org()
    held = studio.slot(0)
    booked = await api.book(org, held)
    assert booked.status_code == 201, booked.text
    day, slots = first_day(studio)

    await _sign_in(page, "en", org.owner)
    await page.goto(f"/web/en/spaces/{studio.space_id}?day={day}")
    await expect(page.locator("[data-studio-name]")).to_have_text("Karlín")
    await expect(page.locator("[data-studio-zone]")).to_have_text("(Europe/Prague)")
    await _slot_rows_say(page, "en", slots, held)

    await page.get_by_role("link", name="Čeština").click()
    await expect(page.locator("html")).to_have_attribute("lang", "cs")
    await expect(page).to_have_url(f"/web/cs/spaces/{studio.space_id}?day={day}")
    await expect(page.locator("[data-user]")).to_have_text(org.owner)
    await _slot_rows_say(page, "cs", slots, held)
    # The choice is remembered: the site's entry now opens in Czech.
    await page.goto("/web")
    await expect(page).to_have_url("/web/cs/")


async def test_signing_in_opens_the_pages_in_the_members_own_language(page: Page, api: Api) -> None:
    org = await api.org()
    czech = f"user-{uuid.uuid4().hex[:8]}"
    member = {"user": czech, "role": "member", "locale": "cs"}
    added = await api.call("POST", f"/v1/ops/orgs/{org.org_id}/members", OPS, member)
    assert added.status_code == 201, added.text

    await _sign_in(page, "en", czech, lands_in="cs")
    await expect(page.locator("html")).to_have_attribute("lang", "cs")
    await page.goto("/web")
    await expect(page).to_have_url("/web/cs/")


async def test_a_double_click_on_book_books_once_and_leads_to_the_card_payment_page(
    page: Page, api: Api
) -> None:
    studio, org = await _a_member_on_a_studios_first_day(page, api)

    keys: list[str] = []
    page.on("request", lambda r: keys.append(r.headers.get("idempotency-key", "")))
    row = page.locator(f"tr[data-slot='{studio.slot(0)}']")
    book = row.get_by_role("button", name=BOOK["en"])
    await expect(book).to_have_text(BOOK["en"])
    await book.dblclick()
    await page.wait_for_url(lambda url: "/web/" not in url)

    assert len({key for key in keys if key}) == 1, keys  # one intent, one key

    listed = await api.call("GET", f"/v1/orgs/{org.org_id}/bookings", org.owner)
    bookings = listed.json()
    assert [b["slot"]["slot_id"] for b in bookings] == [studio.slot(0)]
    assert page.url == bookings[0]["payment"]["checkout_url"]


@pytest.mark.parametrize(
    ("lang", "sentence"),
    [
        ("en", "We did not find what you are looking for"),
        ("cs", "To, co hledáte, jsme nenašli"),
    ],
)
async def test_a_studio_that_does_not_exist_is_said_in_words_not_json(
    page: Page, lang: str, sentence: str
) -> None:
    await page.goto(f"/web/{lang}/spaces/{uuid.uuid4()}")
    problem = page.get_by_role("alert")
    await expect(problem).to_contain_text(sentence)
    await expect(problem).not_to_contain_text("{")


@pytest.mark.parametrize("lang", ["cs", "en"])
async def test_every_page_has_no_serious_accessibility_violation(
    page: Page, api: Api, lang: str
) -> None:
    studio = await api.studio(slots=2, timezone="Europe/Prague", name="Smíchov")
    day, _ = first_day(studio)
    pages = {
        "signin": f"/web/{lang}/signin",
        "studios": f"/web/{lang}/",
        "slots": f"/web/{lang}/spaces/{studio.space_id}?day={day}",
    }
    org = await api.org()
    found = {}
    for name, path in pages.items():
        if name != "signin":  # the other pages as a member sees them: slots with "book"
            await _signed_in_once(page, lang, org.owner)
        await page.goto(path)
        await _loaded(page)
        await screenshot(page, f"{name}-{lang}")
        found[name] = await blocking_violations(page)
    await expect(page.get_by_role("button", name=BOOK[lang]).first).to_be_visible()
    await page.set_viewport_size({"width": 390, "height": 844})  # a phone
    await screenshot(page, f"slots-phone-{lang}")
    assert found == {name: [] for name in pages}


async def _signed_in_once(page: Page, lang: str, user: str) -> None:
    if await page.evaluate("localStorage.getItem('liftfit.identity')") is None:
        await _sign_in(page, lang, user, lands_in="en")  # the member's own locale


async def _loaded(page: Page) -> None:
    """A page that reads data has shown it (or its problem) once its loading note is gone."""
    loading = page.locator("[data-loading]")
    if await loading.count():
        await expect(loading).to_be_hidden()
