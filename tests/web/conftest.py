"""The browser tests: Playwright for Python driving Debian's Chromium (never Playwright's own
download) against the one shared platform's gateway. One browser for the session, a fresh
context (cookies, storage) per test; axe-core comes from .local/web-tools (make web-tools)."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, async_playwright

from tests.gateway.api import Api
from tests.support.platform import Platform

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / ".local/web-tools/node_modules/axe-core/axe.min.js"
ARTIFACTS = ROOT / ".local/artifacts/web"
CHROMIUM = "/usr/bin/chromium"
# What fails a page: axe-core's two worst impacts.
BLOCKING_IMPACTS = ("serious", "critical")


@pytest.fixture(scope="session")
async def browser(request: pytest.FixtureRequest) -> AsyncIterator[Browser]:
    assert shutil.which(CHROMIUM), f"{CHROMIUM} is missing: `make web-tools` installs it"
    assert AXE.exists(), f"{AXE} is missing: `make web-tools` installs it"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"browser tests: screenshots in {ARTIFACTS}")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield launched
        await launched.close()


@pytest.fixture
async def page(browser: Browser, platform: Platform) -> AsyncIterator[Page]:
    # bypass_csp: the pages' policy forbids inline scripts, and so axe-core's injected tag.
    context = await browser.new_context(base_url=platform.gateway, locale="en-GB", bypass_csp=True)
    context.set_default_timeout(15_000)
    opened = await context.new_page()
    yield opened
    await context.close()


@pytest.fixture
async def api(platform: Platform) -> AsyncIterator[Api]:
    async with Api.at(platform.gateway) as client:
        yield client


async def blocking_violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's serious and critical findings on the page as it is now."""
    await page.add_script_tag(path=AXE)
    found: list[dict[str, Any]] = await page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " targets: v.nodes.map(n => n.target.join(' '))}))"
    )
    return [v for v in found if v["impact"] in BLOCKING_IMPACTS]


async def screenshot(page: Page, name: str) -> Path:
    path = ARTIFACTS / f"{name}.png"
    await page.screenshot(path=path, full_page=True)
    return path
