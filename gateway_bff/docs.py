"""What the OpenAPI document says beside the models: every problem an operation can answer,
and the links from one operation's answer to the next (a stateful API tester follows them,
and so can a reader: create a booking, then read, cancel or move it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway_bff.problems import PROBLEM_JSON

_WHY = {
    400: "Malformed JSON (malformed_json), or a missing or malformed Idempotency-Key"
    " (idempotency_key_required, invalid_idempotency_key), or a bad signature",
    401: "No identity (unauthenticated)",
    403: "Not an operator (forbidden)",
    404: "Not found (not_found); also any organisation the caller is not a member of",
    409: "Refused by the current state (slot_unavailable, insufficient_pass_balance,"
    " booking_not_cancellable, booking_not_reschedulable, order_exists, plan_version_exists,"
    " slots_overlap, idempotency_conflict)",
    413: "The body is too large (payload_too_large)",
    422: "The body is not valid (validation_error, with `errors`), or unknown_plan",
    429: "Too many requests (rate_limited): the caller's or the address's writes, or the"
    " booking's PIN reads, passed their limit; nothing was done. `Retry-After` says when to"
    " try again",
    503: "A service, the database or the broker did not answer in time (service_unavailable,"
    " unavailable, traces_unavailable): try again",
}
_PROBLEM = {
    "type": "object",
    "required": ["type", "title", "status", "code"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "code": {"type": "string"},
        "detail": {"type": "string"},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"field": {"type": "string"}, "message": {"type": "string"}},
            },
        },
    },
}


_RETRY_AFTER = {
    "Retry-After": {
        "description": "Whole seconds to wait before trying again",
        "schema": {"type": "integer", "minimum": 1},
    }
}


class Answers:
    def problems(self, *statuses: int) -> dict[int | str, dict[str, Any]]:
        return {status: _problem(status) for status in sorted({*statuses, 503})}

    def read(self, *statuses: int) -> dict[int | str, dict[str, Any]]:
        return self.problems(*statuses)

    def member_read(self, *statuses: int) -> dict[int | str, dict[str, Any]]:
        return self.problems(401, 404, *statuses)

    def member_write(self, *statuses: int) -> dict[int | str, dict[str, Any]]:
        return self.problems(400, 401, 404, 409, 413, 422, *statuses)

    def operator(self, *statuses: int) -> dict[int | str, dict[str, Any]]:
        return self.problems(400, 401, 403, 413, 422, *statuses)


ANSWERS = Answers()


def _problem(status: int) -> dict[str, Any]:
    made: dict[str, Any] = {
        "description": _WHY[status],
        "content": {PROBLEM_JSON: {"schema": _PROBLEM}},
    }
    if status == 429:
        made["headers"] = _RETRY_AFTER
    return made


Link = tuple[str, Mapping[str, str]] | tuple[str, Mapping[str, str], Mapping[str, Any]]


def links(**targets: Link) -> dict[str, Any]:
    """OpenAPI links: name -> (operationId, parameters as runtime expressions[, body])."""
    made: dict[str, Any] = {}
    for name, target in targets.items():
        made[name] = {"operationId": target[0], "parameters": target[1]}
        if len(target) == 3:
            made[name]["requestBody"] = target[2]
    return made


def answer(status: int, description: str, **link_targets: Link) -> dict[int | str, dict[str, Any]]:
    """A success answer with its links, to merge into an operation's `responses`."""
    entry: dict[str, Any] = {"description": description}
    if link_targets:
        entry["links"] = links(**link_targets)
    return {status: entry}
