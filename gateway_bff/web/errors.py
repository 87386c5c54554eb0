"""How the pages answer what they cannot show: under /web, a page that does not exist (an
unknown path, an unknown language, an id that names nothing) is an HTML page in the site's
look with status 404, in the language of the path or else the visitor's; everywhere else the
API's problem details stay as they are.

A pure ASGI middleware rather than an exception handler: the app's handlers turn every
404 into problem JSON (gateway_bff.app), and here only the answer's status and path decide.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway_bff.web import console
from gateway_bff.web.messages import Language
from gateway_bff.web.rendering import other as other_language
from gateway_bff.web.rendering import preferred_language

WEB = "/web"


def install(app: FastAPI) -> None:
    app.add_middleware(NotFoundPage)


def _under_web(path: str) -> bool:
    return path == WEB or path.startswith(f"{WEB}/")


class NotFoundPage:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _under_web(scope["path"]):
            await self.app(scope, receive, send)
            return
        missing = False

        async def send_or_hold(message: Message) -> None:
            nonlocal missing
            if message["type"] == "http.response.start" and message["status"] == 404:
                missing = True
            if not missing:
                await send(message)

        await self.app(scope, receive, send_or_hold)
        if missing:
            await not_found_page(Request(scope, receive))(scope, receive, send)


def not_found_page(request: Request) -> Response:
    """The 404 page, in the language the path names, else the one the visitor prefers."""
    asked = request.url.path.removeprefix(f"{WEB}/").split("/")[0]
    lang = Language(asked) if asked in tuple(Language) else preferred_language(request)
    other = other_language(lang)
    response = console.render(
        request, lang, "errors/not_found.html", "not_found_title", other_url=f"{WEB}/{other}/"
    )
    response.status_code = 404
    return response
