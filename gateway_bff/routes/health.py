"""Alive, ready, and the request metrics.

Ready means every service the gateway needs answers its gRPC health check as serving and
its own database answers; when one does not, /readyz says which (503), so the engineer on
call knows where to look.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from gateway_bff.parts import parts_of
from gateway_bff.problems import PROBLEM_JSON

router = APIRouter(tags=["health"])
DATABASE_TIMEOUT_S = 1.0


@router.get("/healthz", operation_id="alive")
async def alive() -> JSONResponse:
    return JSONResponse({"status": "alive"})


@router.get(
    "/readyz",
    operation_id="ready",
    responses={503: {"description": "Not ready: `missing` names what does not answer"}},
)
async def ready(request: Request) -> JSONResponse:
    parts = parts_of(request)
    missing = await parts.services.missing()
    try:
        await asyncio.wait_for(parts.directory.ping(), DATABASE_TIMEOUT_S)
    except Exception:  # any failure to answer is "not ready", whatever its kind
        missing.append("gateway database")
    if not missing:
        return JSONResponse({"status": "ready", "missing": []})
    body = {
        "type": "about:blank",
        "title": "Not ready",
        "status": 503,
        "code": "not_ready",
        "detail": "not answering: " + ", ".join(missing),
        "missing": missing,
    }
    return JSONResponse(body, status_code=503, media_type=PROBLEM_JSON)


@router.get("/metrics", operation_id="metrics", response_class=Response)
async def metrics(request: Request) -> Response:
    """Prometheus's text: the request metrics, and every consumer group's lag as the
    gateway's sampler last read it (none while the broker is away)."""
    return Response(generate_latest(parts_of(request).metrics), media_type=CONTENT_TYPE_LATEST)
