"""The gate every request passes before any route: who calls, and may they come in.

It runs before the body is read, so a stranger learns nothing from a body's errors:
- `/v1/orgs/{org_id}/...` needs an identity (else 401) and membership of that
  organisation (else 404: whether it exists is not told);
- `/v1/ops/...` needs an identity (else 401) and the operator role (else 403);
- `/v1/me` needs an identity (else 401);
- everything else (catalogue, payments, health) is open.
A write (gateway_bff.limits) is refused with 429 past its address's limit, before anyone is
asked who calls, and past its caller's limit once the caller is known.
Each request also gets its line in the request metrics and its access line, written once
the answer has gone (uvicorn's own came before the answer's first byte, on its path); its
server span (the trace that follows a booking starts there) is
gateway_bff.request_spans', around the gate, so the line carries the trace's id. A pure
ASGI middleware: Starlette's BaseHTTPMiddleware costs a task and a queue per request.
"""

from __future__ import annotations

import logging
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from prometheus_client import Counter, Histogram
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway_bff import problems
from gateway_bff.identity import Authenticator
from gateway_bff.limits import Limits, is_limited_write
from gateway_bff.store.directory import Directory, Member
from servicekit.validation import is_canonical_uuid

ACCESS = logging.getLogger("gateway_bff.access")
# No client body is near this (2,000 new slots are some 300 KiB).
MAX_BODY_BYTES = 1024 * 1024
ME = "/v1/me"  # the caller's own memberships: any identity, no organisation
REQUESTS = Counter(
    "liftfit_http_requests",
    "HTTP requests answered, by method, route template and status",
    ["method", "route", "status"],
)
LATENCY = Histogram(
    "liftfit_http_request_duration_seconds",
    "Time to answer an HTTP request",
    ["method", "route"],
    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)


@dataclass(frozen=True)
class Caller:
    user: str
    member: Member | None = None  # set on /v1/orgs/{org_id}/... paths


def caller_of(request: Request) -> Caller:
    """The caller the gate let in (routes behind the gate only)."""
    caller: Caller = request.state.caller
    return caller


class Gate:
    def __init__(
        self, app: ASGIApp, identity: Authenticator, directory: Directory, limits: Limits
    ) -> None:
        self.app = app
        self.identity = identity
        self.directory = directory
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = {"code": 500}

        async def send_noting_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        headers = Headers(scope=scope)
        try:
            await self._admit_and_serve(scope, receive, send_noting_status, headers)
        finally:
            route, took = _route_of(scope), time.perf_counter() - started
            REQUESTS.labels(scope["method"], route, str(status["code"])).inc()
            LATENCY.labels(scope["method"], route).observe(took)
            _access_line(scope, status["code"], took)

    async def _admit_and_serve(
        self, scope: Scope, receive: Receive, send: Send, headers: Headers
    ) -> None:
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            await _too_large().response()(scope, receive, send)
            return
        receive = _bounded(receive)
        try:
            caller = await self._caller_of(scope, headers)
        except problems.Problem as problem:
            await problem.response()(scope, receive, send)
            return
        except Exception as error:
            fault = problems.from_fault(error)
            if fault is None:
                raise
            await fault.response()(scope, receive, send)
            return
        if caller is not None:
            scope.setdefault("state", {})["caller"] = caller
        await self.app(scope, receive, send)

    async def _caller_of(self, scope: Scope, headers: Headers) -> Caller | None:
        """The caller a guarded path needs (None on an open one), once the limits let it in."""
        path: str = scope["path"]
        write = is_limited_write(scope["method"], path)
        if write:
            self.limits.write_by_address(_address_of(scope))
        caller = await self._admit(path, headers) if _guarded(path) else None
        if write and caller is not None:
            self.limits.write_by_caller(caller.user)
        return caller

    async def _admit(self, path: str, headers: Headers) -> Caller:
        user = await self.identity.caller(headers)
        if user is None:
            raise problems.unauthenticated()
        if path == ME:
            return Caller(user)
        if path.startswith("/v1/ops"):
            if not await self.directory.is_operator(user):
                raise problems.forbidden()
            return Caller(user)
        org_id = path.split("/")[3]
        member = (
            await self.directory.membership(org_id, user) if is_canonical_uuid(org_id) else None
        )
        if member is None:
            raise problems.not_found("no such organisation among yours")
        return Caller(user, member)


def _guarded(path: str) -> bool:
    return path.startswith(("/v1/orgs/", "/v1/ops/")) or path in ("/v1/ops", ME)


def _address_of(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def _too_large() -> problems.Problem:
    detail = f"at most {MAX_BODY_BYTES} bytes"
    return problems.Problem(413, "payload_too_large", "The body is too large", detail)


def _bounded(receive: Receive) -> Receive:
    """The body as it arrives, refused once it passes the bound (a body sent in chunks has
    no length to check beforehand): FastAPI would otherwise read any body whole."""
    seen = 0

    async def bounded() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > MAX_BODY_BYTES:
                raise HTTPException(413, "The body is too large")
        return message

    return bounded


def _access_line(scope: Scope, status: int, took_s: float) -> None:
    """`<client> - "<method> <path> HTTP/<version>" <status> <ms> ms`: uvicorn's line, with
    the time the gateway took."""
    if not ACCESS.isEnabledFor(logging.INFO):
        return
    client = scope.get("client")
    path = urllib.parse.quote(scope["path"])
    if scope.get("query_string"):
        path = f"{path}?{scope['query_string'].decode('ascii', 'replace')}"
    ACCESS.info(
        '%s - "%s %s HTTP/%s" %d %.1f ms',
        f"{client[0]}:{client[1]}" if client else "",
        scope["method"],
        path,
        scope.get("http_version", "1.1"),
        status,
        took_s * 1000,
    )


def _route_of(scope: Scope) -> str:
    route: Any = scope.get("route")
    return str(getattr(route, "path", "unmatched"))
