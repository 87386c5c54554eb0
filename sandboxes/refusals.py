"""How a sandbox's HTTP API refuses a request: ``{"error": "<code>", ...}`` with a status.

Providers answer a malformed request with 400 and what was wrong, never with a server
error, so every refusal of the framework (validation, unknown route, body too large) is
mapped to the same shape. Validation details name the field and the rule but never echo
the input: it may be huge or not even printable.
"""

from __future__ import annotations

import re

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
}
# An unknown field's name is the client's text; only a plain one is repeated back.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


class Refusal(Exception):
    """A request the sandbox refuses: the HTTP status, the API error code and extra fields."""

    def __init__(self, status: int, code: str, **extra: object) -> None:
        super().__init__(code)
        self.status = status
        self.code = code
        self.extra = extra


def install_refusals(app: FastAPI) -> None:
    app.add_exception_handler(Refusal, _refusal)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(HTTPException, _http_exception)


async def _refusal(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, Refusal)
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return JSONResponse({"error": exc.code, **exc.extra}, status_code=exc.status, headers=headers)


async def _invalid_request(_: Request, exc: Exception) -> JSONResponse:
    # 400 rather than FastAPI's 422: the status providers use for malformed requests.
    assert isinstance(exc, RequestValidationError)
    detail = [
        {
            "loc": [_location(part) for part in error["loc"]],
            "msg": error["msg"],
            "type": error["type"],
        }
        for error in exc.errors()
    ]
    return JSONResponse({"error": "invalid_request", "detail": detail}, status_code=400)


def _location(part: object) -> object:
    if isinstance(part, int) or (isinstance(part, str) and _PLAIN_NAME.fullmatch(part)):
        return part
    return "<not repeated>"


async def _http_exception(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    code = _CODES.get(exc.status_code, f"http_{exc.status_code}")
    return JSONResponse({"error": code}, status_code=exc.status_code, headers=exc.headers)
