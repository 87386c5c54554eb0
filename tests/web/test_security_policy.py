"""The pages under their real security policy: the other browser tests switch it off so that
axe-core can be injected, so this one keeps it on and checks that every page does its work
with nothing blocked (no inline script or style, nothing from another origin), and that the
policy is sent at all."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, Page, expect

from tests.gateway.api import OPS, Api
from tests.support.platform import Platform
from tests.web.days import first_day
from tests.web.test_console import SECTIONS

# Set before any page script runs (an init script is not subject to the page's policy).
RECORD_VIOLATIONS = """
window.__blocked = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__blocked.push(`${event.effectiveDirective} ${event.blockedURI}`);
});
"""


@pytest.fixture
async def strict_page(browser: Browser, platform: Platform) -> AsyncIterator[Page]:
    context = await browser.new_context(base_url=platform.gateway, locale="en-GB")
    context.set_default_timeout(15_000)
    await context.add_init_script(RECORD_VIOLATIONS)
    opened = await context.new_page()
    yield opened
    await context.close()


async def _pages(api: Api, lang: str) -> dict[str, dict[str, str]]:
    """Every page by the user who opens it: a customer with a booking, and the operator."""
    studio = await api.studio(slots=1, timezone="Europe/Prague")
    org = await api.org()
    booked = await api.book(org, studio.slot(0))
    assert booked.status_code == 201, booked.text
    day, _ = first_day(studio)
    console = f"/web/{lang}/console"
    return {
        org.owner: {
            "signin": f"/web/{lang}/signin",
            "studios": f"/web/{lang}/",
            "slots": f"/web/{lang}/spaces/{studio.space_id}?day={day}",
            "bookings": f"/web/{lang}/bookings",
            "passes": f"/web/{lang}/passes",
            "console, no access": f"{console}/",
        },
        OPS: {
            "console": f"{console}/",
            "timeline": f"{console}/bookings/{booked.json()['booking_id']}",
            **{name: f"{console}/{name}" for name in SECTIONS},
        },
    }


async def _signed_in_as(page: Page, lang: str, user: str) -> None:
    await page.goto(f"/web/{lang}/signin")
    await page.evaluate(
        "user => localStorage.setItem('liftfit.identity',"
        " JSON.stringify({kind: 'dev', value: user}))",
        user,
    )


@pytest.mark.parametrize("lang", ["cs", "en"])
async def test_every_page_works_under_its_policy_with_nothing_blocked(
    strict_page: Page, api: Api, lang: str
) -> None:
    blocked = {}
    for user, pages in (await _pages(api, lang)).items():
        await _signed_in_as(strict_page, lang, user)
        for name, path in pages.items():
            response = await strict_page.goto(path)
            assert response is not None and response.status == 200, (name, path)
            policy = response.headers.get("content-security-policy", "")
            assert "default-src 'self'" in policy, (name, policy)
            # The page's script ran: it showed who is signed in, and what it loads came.
            await expect(strict_page.locator("[data-user]")).to_have_text(user)
            loading = strict_page.locator("[data-loading]")
            if await loading.count():
                await expect(loading).to_be_hidden()
            await expect(strict_page.get_by_role("alert")).to_be_hidden()
            blocked[name] = await strict_page.evaluate("window.__blocked")
    assert blocked == {name: [] for name in blocked}
