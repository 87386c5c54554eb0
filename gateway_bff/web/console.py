"""The operators' console: its pages under /web/{lang}/console/, for the operator role only.

Like the customers' pages, each route renders a shell; the browser reads everything from the
operators' API (/v1/ops/...) as the signed-in user, so the API's operator guard is the
console's guard too: a page whose first read answers 403 shows that its visitor has no
access, and nothing else (the server cannot tell, since the identity lives in the browser).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from gateway_bff.parts import known_id
from gateway_bff.problems import not_found
from gateway_bff.web import console_messages
from gateway_bff.web.messages import PROBLEMS, TEXTS, Language
from gateway_bff.web.rendering import language, render_page

router = APIRouter(prefix="/web", include_in_schema=False)
# The console's sections besides finding a booking: each a page of its own.
SECTIONS = ("outbox", "incidents", "drift", "audit", "spaces", "orgs", "plans")


@router.get("/{lang}/console/")
async def find_booking(request: Request, lang: str) -> Response:
    return render(request, language(lang), "console/home.html", "console_title")


@router.get("/{lang}/console/bookings/{booking_id}")
async def timeline(request: Request, lang: str, booking_id: str) -> Response:
    chosen = language(lang)
    known_id(booking_id, "booking")
    return render(request, chosen, "console/timeline.html", "timeline_title", booking_id=booking_id)


@router.get("/{lang}/console/{section}")
async def section(request: Request, lang: str, section: str) -> Response:
    chosen = language(lang)
    if section not in SECTIONS:
        raise not_found("no such console page")
    return render(request, chosen, f"console/{section}.html", f"{section}_title", section=section)


def render(request: Request, lang: Language, template: str, title: str, **extra: Any) -> Response:
    """A page with the console's texts and problems beside the customers' (the console's
    win where both say something)."""
    texts = {**TEXTS[lang], **console_messages.TEXTS[lang]}
    problems = {**PROBLEMS[lang], **console_messages.PROBLEMS[lang]}
    return render_page(request, lang, template, title, texts, problems, **extra)
