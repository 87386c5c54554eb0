"""The pages' routes: each renders a shell in the chosen language; the browser's JavaScript
then reads the data from the public API (/v1/...) as the signed-in user, so a page shows
nothing the API would not show that user. None of them is in the OpenAPI document, which
describes the API alone.

The language is in the path (/web/cs/..., /web/en/...): a link names one page in one
language, and the switch is a plain link. /web chooses one: the language the page last
remembered (a cookie the switch sets), else the browser's, else Czech.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from liftfit.payment.v1 import payment_pb2 as ppb

from gateway_bff.identity import DevAuthenticator
from gateway_bff.parts import known_id, parts_of
from gateway_bff.problems import Problem, not_found
from gateway_bff.web import console, errors
from gateway_bff.web.messages import DEFAULT_LANGUAGE, PROBLEMS, TEXTS, Language
from servicekit.validation import is_canonical_uuid

HERE = Path(__file__).parent
LANGUAGE_COOKIE = "liftfit_lang"
# Everything the pages load comes from the gateway itself; nothing inline runs.
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}

router = APIRouter(prefix="/web", include_in_schema=False)
_templates = Jinja2Templates(directory=HERE / "templates")


def mount(app: FastAPI) -> None:
    """The assets first: /web/assets/... would otherwise read as a page in language 'assets'."""
    app.mount("/web/assets", StaticFiles(directory=HERE / "static"), name="web-assets")
    app.include_router(console.router)
    app.include_router(router)
    errors.install(app)


@router.get("")
async def choose_language(request: Request) -> RedirectResponse:
    return RedirectResponse(f"/web/{preferred_language(request)}/", status_code=303)


@router.get("/{lang}/")
async def studios(request: Request, lang: str) -> Response:
    return _render(request, _language(lang), "studios.html", "studios_title")


@router.get("/{lang}/signin")
async def sign_in(request: Request, lang: str) -> Response:
    dev = isinstance(parts_of(request).identity, DevAuthenticator)
    return _render(request, _language(lang), "signin.html", "sign_in_title", dev=dev)


@router.get("/{lang}/spaces/{space_id}")
async def slots(request: Request, lang: str, space_id: str) -> Response:
    known_id(space_id, "studio")
    return _render(request, _language(lang), "slots.html", "slots_title", space_id=space_id)


@router.get("/{lang}/bookings")
async def my_bookings(request: Request, lang: str) -> Response:
    return _render(request, _language(lang), "bookings.html", "bookings_title")


@router.get("/{lang}/passes")
async def passes(request: Request, lang: str) -> Response:
    return _render(request, _language(lang), "passes.html", "passes_title")


@router.get("/{lang}/payments/return")
async def payment_return(
    request: Request, lang: str, payment_id: Annotated[str | None, Query()] = None
) -> Response:
    return await payment_return_page(request, _language(lang), payment_id)


async def payment_return_page(request: Request, lang: Language, payment_id: str | None) -> Response:
    """Where the card sandbox sends the customer back. It only reads: the payment's state as
    the payment service has it, and what it pays for (a booking or an order), which the
    browser then follows through the API as the signed-in member until it is settled."""
    payment = await _payment(request, payment_id or "")
    return _render(
        request,
        lang,
        "return.html",
        "return_title",
        state=payment.state if payment else "unknown",
        booking_id=payment.booking_id if payment else "",
        order_id=payment.order_id if payment else "",
        other_url=f"/web/{_other(lang)}/payments/return",
    )


async def _payment(request: Request, payment_id: str) -> ppb.Payment | None:
    if not is_canonical_uuid(payment_id):
        return None
    services = parts_of(request).services
    try:
        found: ppb.Payment = await services["payment"].read(
            services.payment.GetPayment, ppb.GetPaymentRequest(payment_id=payment_id)
        )
    except Problem:
        return None  # not known, or not answering: the page says it does not know yet
    return found


def _other(lang: Language) -> Language:
    return Language.EN if lang is Language.CS else Language.CS


def _language(lang: str) -> Language:
    if lang not in tuple(Language):
        raise not_found("no such language")
    return Language(lang)


def _render(request: Request, lang: Language, template: str, title: str, **extra: Any) -> Response:
    return render_page(request, lang, template, title, TEXTS[lang], PROBLEMS[lang], **extra)


def render_page(
    request: Request,
    lang: Language,
    template: str,
    title: str,
    texts: Mapping[str, str],
    problems: Mapping[str, str],
    **extra: Any,
) -> Response:
    """A page of the site in `lang`: `title` is a key of `texts`, and the page's script
    gets the texts and the problems' sentences as its data."""
    other = _other(lang)
    page = request.url.path.removeprefix(f"/web/{lang}")
    context = {
        "lang": lang.value,
        "t": texts,
        "title": texts[title],
        "other_lang": other.value,
        "other_url": f"/web/{other}{page}",
        "page_data": {"lang": lang.value, "texts": texts, "problems": problems},
        **extra,
    }
    response = _templates.TemplateResponse(request, template, context)
    response.headers.update(_HEADERS)
    return response


def preferred_language(request: Request) -> Language:
    remembered = request.cookies.get(LANGUAGE_COOKIE, "")
    if remembered in tuple(Language):
        return Language(remembered)
    for part in request.headers.get("accept-language", "").split(",")[:20]:
        tag = part.split(";")[0].strip().lower()[:2]
        if tag in tuple(Language):
            return Language(tag)
    return DEFAULT_LANGUAGE
