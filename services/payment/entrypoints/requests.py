"""The PaymentService's query and notification fields, checked before any of them is used.

Commands check themselves (`CreateOrder`, `Plan.validated`); these are the rest: ids are
canonical UUIDs, a list filter is a known state or empty, a notification's body is at most
64 KiB and its signature header bounded printable text.
"""

from __future__ import annotations

from dataclasses import dataclass

from servicekit import validation
from servicekit.commands import state_filter
from servicekit.refusals import invalid_fields_refused
from servicekit.schema import OPEN, RESOLVED
from services.payment.domain.errors import InvalidSignature
from services.payment.domain.notification import MAX_BODY
from services.payment.domain.payment_states import ALL_STATES
from services.payment.domain.signature import MAX_HEADER

INCIDENT_STATES = (OPEN, RESOLVED)


@dataclass(frozen=True)
class Notification:
    raw_body: bytes
    signature_header: str


def payment_state_filter(value: str) -> str:
    return state_filter(value, ALL_STATES)


def incident_state_filter(value: str) -> str:
    return state_filter(value, INCIDENT_STATES)


def notification(raw_body: bytes, signature_header: str) -> Notification:
    with invalid_fields_refused():
        validation.payload("raw_body", raw_body, MAX_BODY)
    try:
        validation.text("signature_header", signature_header, MAX_HEADER, required=False)
    except validation.InvalidField:
        # Whatever is wrong with the header, the notification is not signed as it must be.
        raise InvalidSignature("malformed signature header") from None
    return Notification(raw_body, signature_header)
