"""What a verified notification tells us: only which gateway payment to look at."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from services.payment.domain.errors import InvalidSignature

# The id goes into a URL of the provider and into logs: a plain token, of bounded length.
_PAYMENT_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
MAX_EVENT_ID = 128
MAX_BODY = 64 * 1024  # bytes: a gateway's notification is a few hundred


@dataclass(frozen=True)
class NotificationHint:
    event_id: str
    provider_payment_id: str


def read_hint(body: bytes) -> NotificationHint:
    """The state in the body is deliberately ignored: the gateway is asked for the truth."""
    if len(body) > MAX_BODY:
        raise InvalidSignature("the signed body is larger than any notification")
    try:
        document = json.loads(body)
        payment_id = document["data"]["payment_id"]
        event_id = str(document.get("id", ""))[:MAX_EVENT_ID]
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        raise InvalidSignature("the signed body is not a payment notification") from None
    if not isinstance(payment_id, str) or not _PAYMENT_ID.fullmatch(payment_id):
        raise InvalidSignature("the notification names no valid payment id")
    return NotificationHint(event_id, payment_id)
