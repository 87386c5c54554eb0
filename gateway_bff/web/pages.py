"""The pages' routes: each renders a shell in the chosen language; the browser's JavaScript
then reads the data from the public API (/v1/...) as the signed-in user, so a page shows
nothing the API would not show that user. None of them is in the OpenAPI document, which
describes the API alone.

The language is in the path (/web/cs/..., /web/en/...): a link names one page in one
language, and the switch is a plain link. /web chooses one: the language the page last
remembered (a cookie the switch sets), else the browser's, else Czech.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from gateway_bff.identity import DevAuthenticator
from gateway_bff.parts import known_id, parts_of
from gateway_bff.problems import not_found
from gateway_bff.web import console, errors
from gateway_bff.web.messages import DEFAULT_LANGUAGE, PROBLEMS, TEXTS, Language

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
    return RedirectResponse(f"/web/{_preferred(request)}/", status_code=303)


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


def _language(lang: str) -> Language:
    if lang not in tuple(Language):
        raise not_found("no such language")
    return Language(lang)


def _render(request: Request, lang: Language, template: str, title: str, **extra: Any) -> Response:
    texts = TEXTS[lang]
    other = Language.EN if lang is Language.CS else Language.CS
    page = request.url.path.removeprefix(f"/web/{lang}")
    context = {
        "lang": lang.value,
        "t": texts,
        "title": texts[title],
        "other_lang": other.value,
        "other_url": f"/web/{other}{page}",
        "page_data": {"lang": lang.value, "texts": texts, "problems": PROBLEMS[lang]},
        **extra,
    }
    response = _templates.TemplateResponse(request, template, context)
    response.headers.update(_HEADERS)
    return response


def _preferred(request: Request) -> Language:
    remembered = request.cookies.get(LANGUAGE_COOKIE, "")
    if remembered in tuple(Language):
        return Language(remembered)
    for part in request.headers.get("accept-language", "").split(",")[:20]:
        tag = part.split(";")[0].strip().lower()[:2]
        if tag in tuple(Language):
            return Language(tag)
    return DEFAULT_LANGUAGE
