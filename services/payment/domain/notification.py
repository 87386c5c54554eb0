"""What a verified notification tells us: only which gateway payment to look at."""

from __future__ import annotations

import json
from dataclasses import dataclass

from services.payment.domain.errors import InvalidSignature

MAX_BODY = 64 * 1024  # bytes: a gateway's notification is a few hundred


@dataclass(frozen=True)
class NotificationHint:
    event_id: str
    provider_payment_id: str


def read_hint(body: bytes) -> NotificationHint:
    """The state in the body is deliberately ignored: the gateway is asked for the truth."""
    try:
        document = json.loads(body)
        data = document["data"]
        return NotificationHint(str(document.get("id", "")), str(data["payment_id"]))
    except (ValueError, KeyError, TypeError):
        raise InvalidSignature("the signed body is not a payment notification") from None
