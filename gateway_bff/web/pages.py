"""The pages' routes: each renders a shell in the chosen language; the browser's JavaScript
then reads the data from the public API (/v1/...) as the signed-in user, so a page shows
nothing the API would not show that user. None of them is in the OpenAPI document, which
describes the API alone.

The language is in the path (/web/cs/..., /web/en/...): a link names one page in one
language, and the switch is a plain link. /web chooses one: the language the page last
remembered (a cookie the switch sets), else the browser's, else Czech.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import RedirectResponse, Response
from liftfit.payment.v1 import payment_pb2 as ppb

from gateway_bff.identity import DevAuthenticator
from gateway_bff.parts import known_id, parts_of
from gateway_bff.problems import Problem
from gateway_bff.web.messages import PROBLEMS, TEXTS, Language
from gateway_bff.web.rendering import language, other, preferred_language, render_page
from servicekit.validation import is_canonical_uuid

router = APIRouter(prefix="/web", include_in_schema=False)


@router.get("")
async def choose_language(request: Request) -> RedirectResponse:
    return RedirectResponse(f"/web/{preferred_language(request)}/", status_code=303)


@router.get("/{lang}/")
async def studios(request: Request, lang: str) -> Response:
    return _render(request, language(lang), "studios.html", "studios_title")


@router.get("/{lang}/signin")
async def sign_in(request: Request, lang: str) -> Response:
    dev = isinstance(parts_of(request).identity, DevAuthenticator)
    return _render(request, language(lang), "signin.html", "sign_in_title", dev=dev)


@router.get("/{lang}/spaces/{space_id}")
async def slots(request: Request, lang: str, space_id: str) -> Response:
    known_id(space_id, "studio")
    return _render(request, language(lang), "slots.html", "slots_title", space_id=space_id)


@router.get("/{lang}/bookings")
async def my_bookings(request: Request, lang: str) -> Response:
    return _render(request, language(lang), "bookings.html", "bookings_title")


@router.get("/{lang}/passes")
async def passes(request: Request, lang: str) -> Response:
    return _render(request, language(lang), "passes.html", "passes_title")


@router.get("/{lang}/payments/return")
async def payment_return(
    request: Request, lang: str, payment_id: Annotated[str | None, Query()] = None
) -> Response:
    return await payment_return_page(request, language(lang), payment_id)


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
        other_url=f"/web/{other(lang)}/payments/return",
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


def _render(request: Request, lang: Language, template: str, title: str, **extra: Any) -> Response:
    return render_page(request, lang, template, title, TEXTS[lang], PROBLEMS[lang], **extra)
