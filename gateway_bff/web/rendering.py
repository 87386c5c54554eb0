"""How a page of the site is rendered, and in which language: shared by the customers'
pages, the operators' console and the not-found page, which otherwise know nothing of
each other."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastapi.templating import Jinja2Templates
from starlette.requests import Request
from starlette.responses import Response

from gateway_bff.problems import not_found
from gateway_bff.web.messages import DEFAULT_LANGUAGE, Language

HERE = Path(__file__).parent
LANGUAGE_COOKIE = "liftfit_lang"
# Everything the pages load comes from the gateway itself; nothing inline runs.
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}
_templates = Jinja2Templates(directory=HERE / "templates")


def other(lang: Language) -> Language:
    return Language.EN if lang is Language.CS else Language.CS


def language(lang: str) -> Language:
    """The language a path names; any other segment names no page."""
    if lang not in tuple(Language):
        raise not_found("no such language")
    return Language(lang)


def preferred_language(request: Request) -> Language:
    """The language the page last remembered (a cookie the switch sets), else the
    browser's, else Czech."""
    remembered = request.cookies.get(LANGUAGE_COOKIE, "")
    if remembered in tuple(Language):
        return Language(remembered)
    for part in request.headers.get("accept-language", "").split(",")[:20]:
        tag = part.split(";")[0].strip().lower()[:2]
        if tag in tuple(Language):
            return Language(tag)
    return DEFAULT_LANGUAGE


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
    switched = other(lang)
    page = request.url.path.removeprefix(f"/web/{lang}")
    context = {
        "lang": lang.value,
        "t": texts,
        "title": texts[title],
        "other_lang": switched.value,
        "other_url": f"/web/{switched}{page}",
        "page_data": {"lang": lang.value, "texts": texts, "problems": problems},
        **extra,
    }
    response = _templates.TemplateResponse(request, template, context)
    response.headers.update(_HEADERS)
    return response
