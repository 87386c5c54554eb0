"""Schemathesis hooks (SCHEMATHESIS_HOOKS=tests.gateway.schemathesis_hooks) for the rules of the
gateway's document that JSON Schema cannot state, so that a request the document calls valid
is one the platform takes, and every check runs on every operation:

- a slot ends after it starts and lasts at most a day (a rule between two fields): a new
  slot's end is put within the day after its start;
- a slot listing's `to` is not before its `from`: the two are put in order;
- a payment notification is signed by the card gateway (an HMAC of the exact bytes sent,
  with a secret): a signature header of the declared form is replaced by the one the card
  sandbox would send for the body, signed with CARD_GATEWAY_WEBHOOK_SECRETS. A header not
  of that form, or none, is left alone: the gateway must refuse it.

One refusal is let through, narrowly: the contract fixes `422 unknown_plan` for an order of
a plan code and version the catalogue does not have. Whether a plan exists is the
catalogue's state, which no schema can declare, so a well-formed order of a plan that does
not exist is refused by design; `filter_failure` drops that one failure (ST202, Schema-valid
request rejected) of that one operation when the answer is that code, and nothing else.

A second is let through as narrowly: the stateful phase infers that `POST .../bookings`
creates what `GET .../bookings/{booking_id}/access` reads, because the two share the
booking's id. A booking's access is not made by its creation: the access service plans it
once the booking is paid for (a card booking waits for the card gateway's notification), so
right after the POST the access answers `404 not_found`, as the contract says. That one
failure (ST302, Created resource not found) of that one operation with that answer is dropped.

Only values that are already valid times are touched, so a case that breaks the document
somewhere else still does. `before_call` runs before every request of every phase
(examples, coverage, fuzzing, stateful); Schemathesis re-reads the case's validity after it.
"""

from __future__ import annotations

import json
import os
import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import requests
import schemathesis
from schemathesis import Case, HookContext, Response
from schemathesis.core.failures import Failure
from schemathesis.openapi.checks import EnsureResourceAvailability, RejectedPositiveData

from gateway_bff.routes.payments import SIGNATURE_HEADER, SIGNATURE_PATTERN
from sandboxes.card_gateway.signing import sign
from servicekit import validation

SECRETS_VARIABLE = "CARD_GATEWAY_WEBHOOK_SECRETS"
LONGEST_SLOT = timedelta(hours=24)
SLOT = timedelta(hours=1)
LAST_END = validation.LATEST - timedelta(seconds=1)  # a slot's end is a time of the calendar too
_SIGNATURE = re.compile(SIGNATURE_PATTERN)


@schemathesis.hook
def before_call(context: HookContext, case: Case[Any], kwargs: dict[str, Any]) -> None:
    operation = _operation(case)
    if operation == "createSlots":
        _slots_in_order(case.body)
    elif operation == "listSlots":
        _window_in_order(case.query)
    elif operation == "receivePaymentNotification":
        _signed(case)


@schemathesis.hook
def filter_failure(
    context: HookContext, failure: Failure, case: Case[Any], response: Response
) -> bool:
    """Keeps every failure but a well-formed order of a plan the catalogue does not have and
    the access of a booking just made, before it is paid for."""
    return not (_unknown_plan(failure, case, response) or _unpaid_access(failure, response))


def _unknown_plan(failure: Failure, case: Case[Any], response: Response) -> bool:
    return (
        _operation(case) == "createOrder"
        and isinstance(failure, RejectedPositiveData)
        and response.status_code == 422
        and _code(response) == "unknown_plan"
    )


def _unpaid_access(failure: Failure, response: Response) -> bool:
    return (
        isinstance(failure, EnsureResourceAvailability)
        and failure.created_with.endswith("/bookings")
        and failure.not_available_with.endswith("/bookings/{booking_id}/access")
        and response.status_code == 404
        and _code(response) == "not_found"
    )


def _operation(case: Case[Any]) -> str:
    return str(case.operation.definition.raw.get("operationId", ""))


def _code(response: Response) -> str:
    try:
        answer = json.loads(response.content)
    except ValueError:
        return ""
    return str(answer.get("code", "")) if isinstance(answer, dict) else ""


def _slots_in_order(body: object) -> None:
    if not isinstance(body, dict) or not isinstance(body.get("slots"), list):
        return
    timed: list[tuple[dict[str, Any], datetime, datetime]] = []
    for slot in body["slots"]:
        if isinstance(slot, dict):
            starts, ends = _time(slot.get("starts_at")), _time(slot.get("ends_at"))
            if starts is not None and ends is not None:
                timed.append((slot, starts, ends))
    placed = _apart([_within_a_day(starts, ends) for _, starts, ends in timed])
    for (slot, *was), now in zip(timed, placed, strict=True):
        if tuple(was) != now:
            slot["starts_at"], slot["ends_at"] = _written(now[0]), _written(now[1])


def _within_a_day(starts: datetime, ends: datetime) -> tuple[datetime, datetime]:
    if timedelta(0) < ends - starts <= LONGEST_SLOT:
        return starts, ends
    starts = min(starts, ends, LAST_END - SLOT)
    return starts, starts + SLOT


def _apart(slots: list[tuple[datetime, datetime]]) -> list[tuple[datetime, datetime]]:
    """The slots of one request, each moved after the ones before it that it overlaps (the
    booking service refuses new slots that overlap each other), within the calendar."""
    order = sorted(range(len(slots)), key=lambda i: slots[i][0])
    placed = list(slots)
    free_from = validation.EARLIEST
    for i in order:
        starts, ends = slots[i]
        if starts < free_from:
            starts, ends = free_from, free_from + (ends - starts)
        placed[i] = (starts, ends)
        free_from = ends
    overshoot = free_from - LAST_END
    if overshoot > timedelta(0):  # pushed past the end: all of them back by as much
        placed = [(starts - overshoot, ends - overshoot) for starts, ends in placed]
    return placed


def _window_in_order(query: object) -> None:
    if not isinstance(query, dict):
        return
    since, until = _time(query.get("from")), _time(query.get("to"))
    if since is not None and until is not None and until < since:
        query["from"], query["to"] = query["to"], query["from"]


def _signed(case: Case[Any]) -> None:
    headers = case.headers
    if headers is None or not _SIGNATURE.fullmatch(str(headers.get(SIGNATURE_HEADER, ""))):
        return
    secrets = [s for s in os.environ.get(SECRETS_VARIABLE, "").split(",") if s]
    if not secrets:
        raise RuntimeError(f"{SECRETS_VARIABLE} names no secret to sign notifications with")
    headers[SIGNATURE_HEADER] = sign(_bytes_sent(case), secrets, int(time.time()))


def _bytes_sent(case: Case[Any]) -> bytes:
    """The body exactly as the request will carry it: prepared the way the transport sends."""
    sent = case.as_transport_kwargs(base_url="http://gateway")
    prepared = requests.Request(
        method=sent["method"], url=sent["url"], json=sent.get("json"), data=sent.get("data")
    ).prepare()
    body = prepared.body or b""
    return body if isinstance(body, bytes) else str(body).encode()


def _time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return validation.utc_time("time", value)
    except validation.InvalidField:
        return None


def _written(when: datetime) -> str:
    return when.astimezone(UTC).isoformat().replace("+00:00", "Z")
