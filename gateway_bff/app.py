"""The ASGI application: the routes behind the gate, and every error as problem details."""

from __future__ import annotations

import functools
import logging
import re
import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from gateway_bff import bodies
from gateway_bff.docs import ANSWERS
from gateway_bff.edge import Gate
from gateway_bff.limits import is_limited_write
from gateway_bff.parts import IDEMPOTENCY_HEADER, Parts
from gateway_bff.problems import Problem, from_fault, validation_error
from gateway_bff.request_spans import RequestSpans
from gateway_bff.routes import (
    bookings,
    catalogue,
    catalogue_admin,
    health,
    me,
    operations,
    orders,
    payments,
)
from gateway_bff.web import site
from servicekit.validation import IDEMPOTENCY_KEY_PATTERN

log = logging.getLogger(__name__)
Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[None]]
DESCRIPTION = """The public HTTP API of LIFT & FIT Private Space (contract version 1).

Identity: `X-Dev-User: <user>` in development mode, else `Authorization: Bearer <JWT>`.
Everything under `/v1/orgs/{org_id}/` is for members of that organisation (404 to anyone
else); `/v1/ops/` is for operators (403). Errors are RFC 9457 problem details with a
machine-readable `code`. POSTs that change customer state need an `Idempotency-Key`.
"""


def create_app(parts: Parts, lifespan: Lifespan | None = None) -> FastAPI:
    app = FastAPI(
        title="LIFT & FIT gateway",
        version="1",
        description=DESCRIPTION,
        lifespan=lifespan,
        # The server spans are gateway_bff.request_spans' (below) and the metrics the
        # gate's; FastAPI's own would be a second span and a second set.
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
    )
    app.state.parts = parts
    for module in (catalogue, me, bookings, orders, payments, catalogue_admin, operations, health):
        app.include_router(module.router)
    site.mount(app)  # the customers' pages: outside the OpenAPI document
    _answer_errors_as_problems(app)
    app.add_middleware(
        Gate, identity=parts.identity, directory=parts.directory, limits=parts.limits
    )
    # A server span per request, named by its route, around the gate: a booking's trace
    # starts there. Added last, so it runs first.
    app.add_middleware(RequestSpans)
    _document(app)
    return app


def _document(app: FastAPI) -> None:
    """FastAPI documents its own 422 body; the gateway answers problem details instead
    (`_answer_errors_as_problems`), so the document says so. Every write the gate limits
    may be refused with 429, which the document says where the gate decides it. The
    Idempotency-Key is checked by a dependency that answers the contract's 400 (FastAPI
    would answer 422), so FastAPI documents it as optional: the document says it is
    required, and what it must look like."""
    plain = app.openapi

    def document() -> dict[str, Any]:
        if app.openapi_schema is None:
            made = plain()
            for path, item in made["paths"].items():
                for method, operation in item.items():
                    answers = operation.get("responses", {})
                    if "422" in answers:
                        answers["422"] = ANSWERS.problems(422)[422]
                    if is_limited_write(method, path):
                        answers["429"] = ANSWERS.problems(429)[429]
                    for parameter in operation.get("parameters", ()):
                        if parameter["name"] == IDEMPOTENCY_HEADER:
                            parameter["required"] = True
                            parameter["schema"] = {
                                "type": "string",
                                "pattern": IDEMPOTENCY_KEY_PATTERN,
                            }
            for name in ("HTTPValidationError", "ValidationError"):
                made.get("components", {}).get("schemas", {}).pop(name, None)
            app.openapi_schema = made
        return app.openapi_schema

    app.openapi = document  # type: ignore[method-assign]


def _answer_errors_as_problems(app: FastAPI) -> None:
    @app.exception_handler(Problem)
    async def problem(request: Request, error: Problem) -> JSONResponse:
        return error.response()

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        errors: list[Any] = list(error.errors())
        if any(e.get("type") == "json_invalid" for e in errors):
            return Problem(
                400, "malformed_json", "The body is not JSON", "malformed JSON"
            ).response()
        return validation_error([_field_error(e) for e in errors]).response()

    @app.exception_handler(HTTPException)
    async def http(request: Request, error: HTTPException) -> JSONResponse:
        # FastAPI's own 400 is a body it could not read as JSON (not UTF-8, say).
        codes = {
            400: "malformed_json",
            404: "not_found",
            405: "method_not_allowed",
            413: "payload_too_large",
        }
        code = codes.get(error.status_code, "http_error")
        response = Problem(error.status_code, code, str(error.detail)).response()
        response.headers.update(error.headers or {})
        if error.status_code == 405:
            response.headers["Allow"] = _allowed(request, response.headers.get("Allow", ""))
        return response

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        fault = from_fault(error)
        if fault is not None:
            return fault.response()
        correlation = uuid.uuid4().hex[:12]
        log.error("unexpected error (correlation %s)", correlation, exc_info=error)
        detail = f"internal error (correlation {correlation})"
        return Problem(500, "internal", "Internal error", detail).response()


def _allowed(request: Request, said: str) -> str:
    """The methods the document lists for the path: Starlette's 405 names only those of
    the first route that matched it, and a path's GET and POST are often two routes.
    A path outside the document (the pages) keeps what Starlette said."""
    for template, item in request.app.openapi()["paths"].items():
        if _template(template).fullmatch(request.url.path):
            return ", ".join(sorted(method.upper() for method in item if method in _METHODS))
    return said


_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})


@functools.cache
def _template(template: str) -> re.Pattern[str]:
    return re.compile(re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)))


def _field_error(error: Any) -> dict[str, str]:
    where = [str(part) for part in error.get("loc", ()) if part != "body"]
    if str(error.get("type", "")).startswith("union_tag"):
        # A kind that names no shape (a plan's): the field is the discriminator.
        where.append(str(error.get("ctx", {}).get("discriminator", "")).strip("'"))
    elif where and where[0] in bodies.PLAN_KINDS:
        where = where[1:]  # a plan's shape is named by its kind, which is not a field
    return {"field": ".".join(where) or "body", "message": str(error.get("msg", "invalid"))}
