"""The site in one place: the assets, the customers' pages, the operators' console, the
not-found page, and the front door (`/`) that sends each visitor where it can start."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from gateway_bff.web import console, errors, pages
from gateway_bff.web.rendering import HERE, preferred_language

API_REFERENCE = "/docs"
front_door = APIRouter(include_in_schema=False)


def mount(app: FastAPI) -> None:
    """The assets first: /web/assets/... would otherwise read as a page in language 'assets'."""
    app.mount("/web/assets", StaticFiles(directory=HERE / "static"), name="web-assets")
    app.include_router(front_door)
    app.include_router(console.router)
    app.include_router(pages.router)
    errors.install(app)


@front_door.get("/")
async def start(request: Request) -> Response:
    """A browser (it accepts HTML) goes to the studios in its language; anything else is
    an API client, told where the API is described rather than sent to a page."""
    if "text/html" in request.headers.get("accept", ""):
        return RedirectResponse(f"/web/{preferred_language(request)}/", status_code=303)
    links = {"api_reference": API_REFERENCE, "openapi": "/openapi.json", "pages": "/web"}
    return JSONResponse(links, headers={"Link": f'<{API_REFERENCE}>; rel="service-doc"'})
