"""Problem details (RFC 9457): every error the gateway answers, and the one place the
services' refusal reasons become the contract's HTTP statuses and codes.

A service refuses with a gRPC status carrying an ErrorInfo reason (servicekit.errors). The
reason, not the status code, decides the answer: the contract names the same reasons.
A call that no service answered (unreachable, past its deadline) is 503: the client may try
again, and the detail names the service, never its address.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import grpc
from starlette.responses import JSONResponse

from servicekit.errors import error_info
from servicekit.faults import Fault, classify

PROBLEM_JSON = "application/problem+json"

# reason -> (HTTP status, title). Reasons not listed are the service's own failure: 500.
_STATUS_OF_REASON: Mapping[str, tuple[int, str]] = {
    "validation_error": (422, "The request is not valid"),
    "invalid_idempotency_key": (400, "The Idempotency-Key header is malformed"),
    "not_found": (404, "Not found"),
    "idempotency_conflict": (409, "The Idempotency-Key was used for another request"),
    "slot_unavailable": (409, "The slot is not available"),
    "insufficient_pass_balance": (409, "The organisation has no pass entry left"),
    "booking_not_cancellable": (409, "The booking cannot be cancelled"),
    "booking_not_reschedulable": (409, "The booking cannot be moved"),
    "order_exists": (409, "The organisation already has that subscription"),
    "plan_version_exists": (409, "That plan version exists and cannot change"),
    "slots_overlap": (409, "A new slot overlaps one the studio has"),
    "amount_mismatch": (409, "The amount differs from the one agreed"),
    "unknown_plan": (422, "No such plan in the catalogue"),
    "invalid_signature": (400, "The signature is missing, wrong or stale"),
    "pin_not_active": (409, "The access is not active"),
    "gateway_unavailable": (503, "The payment provider is unavailable; try again"),
    "unavailable": (503, "Temporarily unavailable; try again"),
    "conflict": (503, "A concurrent change got in the way; try again"),
}
# A 503 tells the client when trying again makes sense.
RETRY_AFTER_S = "1"
TOO_MANY_REQUESTS = "rate_limited"


class Problem(Exception):
    """An answer that is not a success, raised anywhere and rendered once."""

    def __init__(self, status: int, code: str, title: str, detail: str = "", **extra: Any) -> None:
        super().__init__(f"{status} {code}: {detail or title}")
        self.status = status
        self.code = code
        self.title = title
        self.detail = detail
        self.extra = extra
        self.retry_after_s: int | None = None  # whole seconds; a 503 says 1 without it

    def response(self) -> JSONResponse:
        body: dict[str, Any] = {
            "type": "about:blank",
            "title": self.title,
            "status": self.status,
            "code": self.code,
        }
        if self.detail:
            body["detail"] = self.detail
        body.update(self.extra)
        headers = None
        if self.retry_after_s is not None:
            headers = {"Retry-After": str(self.retry_after_s)}
        elif self.status == 503:
            headers = {"Retry-After": RETRY_AFTER_S}
        return JSONResponse(body, status_code=self.status, media_type=PROBLEM_JSON, headers=headers)


def unauthenticated() -> Problem:
    return Problem(401, "unauthenticated", "Identify yourself", "No valid identity was presented")


def not_found(detail: str = "") -> Problem:
    return Problem(404, "not_found", "Not found", detail)


def forbidden() -> Problem:
    return Problem(403, "forbidden", "Operators only", "This path is for the operator role")


def validation_error(errors: list[dict[str, str]]) -> Problem:
    detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
    return Problem(422, "validation_error", "The request is not valid", detail, errors=errors)


def too_many_requests(retry_after_s: int, detail: str) -> Problem:
    """A rate limit's refusal: nothing was done, and `Retry-After` says when to try again."""
    problem = Problem(429, TOO_MANY_REQUESTS, "Too many requests; try again later", detail)
    problem.retry_after_s = max(1, retry_after_s)
    return problem


def service_unavailable(service: str, detail: str = "") -> Problem:
    return Problem(
        503,
        "service_unavailable",
        "A service this needs is unavailable; try again",
        detail or f"the {service} service did not answer in time",
        service=service,
    )


def from_fault(error: BaseException) -> Problem | None:
    """The problem for a failure of the gateway's own database or broker, if it is one:
    unreachable or asking to be tried again is 503; anything else is not for the client."""
    if classify(error) is Fault.PERMANENT:
        return None
    return service_unavailable("gateway database", "the gateway's database did not answer")


def refused(service: str, error: grpc.aio.AioRpcError) -> Problem:
    """The contract's problem for a service's refusal (or for no answer at all)."""
    info = error_info(error)
    if info is None:
        return _without_reason(service, error)
    status, title = _STATUS_OF_REASON.get(info.reason, (500, "Internal error"))
    code = info.reason if status != 500 else "internal"
    detail = (error.details() or "")[:300]
    metadata = dict(info.metadata)
    if code == "validation_error":
        field = metadata.get("field", "")
        return validation_error([{"field": field or "body", "message": detail}])
    extra = {k: v for k, v in metadata.items() if k in ("existing_order_id", "state")}
    return Problem(status, code, title, detail, **extra)


def _without_reason(service: str, error: grpc.aio.AioRpcError) -> Problem:
    code = error.code()
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return service_unavailable(service)
    if code == grpc.StatusCode.CANCELLED:
        return service_unavailable(service, f"the call to the {service} service was cancelled")
    return Problem(500, "internal", "Internal error", f"the {service} service failed")
