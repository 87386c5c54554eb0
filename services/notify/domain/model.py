"""Deliveries: one mail to one recipient about one event, with a stable key and a status.

The key is derived from (event, template, recipient), so every copy of an event, in any
order, names the same delivery; it is also the mail's Message-ID. The status is durable:

    queued -> sending -> sent
                      -> unknown   (the server may have taken it: the provider's log
                                    or a person decides)
                      -> failed    (refused for good, or the tries ran out)
           <- sending              (refused for now, or nothing reached the server: retry)

A mail that may have been delivered is never sent again by code: only an operator's
`send_again` queues it again, or the provider's log when it is certain the mail never
came (once; see recovery.py). Every transition is conditional on the state it expects.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from services.notify.domain.errors import DeliveryNotUndecided

# The namespace of delivery keys: uuid5 of (event, template, recipient) under it.
KEY_NAMESPACE = uuid.UUID("0f9d7c1e-4d2a-5b8e-9c3f-6a1b2c3d4e5f")
MESSAGE_ID_DOMAIN = "notify.liftfit"


class DeliveryState(StrEnum):
    QUEUED = "queued"
    SENDING = "sending"
    SENT = "sent"
    FAILED = "failed"
    UNKNOWN = "unknown"


UNDECIDED = (DeliveryState.UNKNOWN, DeliveryState.FAILED)  # waiting for a person


class Template(StrEnum):
    BOOKING_CONFIRMED = "booking_confirmed"
    ACCESS_DETAILS = "access_details"
    BOOKING_CANCELLED = "booking_cancelled"
    REFUND_COMPLETED = "refund_completed"
    ORDER_PAID = "order_paid"


class Decision(StrEnum):
    SEND_AGAIN = "send_again"  # from unknown or failed: one more mail, same Message-ID
    MARK_SENT = "mark_sent"  # from unknown: the operator knows it arrived; no mail


def delivery_key(source: str, template: Template, recipient: str) -> str:
    """The stable key of the mail about `source` (the event's subject, such as
    `booking:<id>` or `grant:<id>`) with `template` to `recipient`."""
    name = f"{source}\n{template.value}\n{recipient.lower()}"
    return str(uuid.uuid5(KEY_NAMESPACE, name))


def message_id(key: str) -> str:
    return f"<{key}@{MESSAGE_ID_DOMAIN}>"


@dataclass
class Delivery:
    delivery_key: str
    source: str
    template: Template
    recipient: str
    locale: str
    context: dict[str, Any]  # what the template shows; never a PIN
    state: DeliveryState = DeliveryState.QUEUED
    org_id: str = ""
    booking_id: str | None = None
    order_id: str | None = None
    tries: int = 0
    last_error: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None
    sent_at: datetime | None = None

    @property
    def message_id(self) -> str:
        return message_id(self.delivery_key)

    def decide(self, decision: Decision) -> DeliveryState:
        """The state an operator's decision leads to, or DeliveryNotUndecided."""
        if decision is Decision.SEND_AGAIN and self.state in UNDECIDED:
            return DeliveryState.QUEUED
        if decision is Decision.MARK_SENT and self.state is DeliveryState.UNKNOWN:
            return DeliveryState.SENT
        raise DeliveryNotUndecided(self.delivery_key, self.state.value)


@dataclass(frozen=True)
class Mail:
    """A rendered mail, ready for the server."""

    message_id: str
    recipient: str
    subject: str
    text: str
    html: str
    headers: dict[str, str] = field(default_factory=dict)


class Outcome(StrEnum):
    """What one try at the mail server established."""

    SENT = "sent"  # the server said 250 to the data
    REFUSED_FOR_NOW = "refused_for_now"  # 4xx, or nothing reached it: try again later
    REFUSED = "refused"  # 5xx: it will never take this mail
    UNKNOWN = "unknown"  # the data went out and no answer came: it may have been taken


@dataclass(frozen=True)
class SendResult:
    outcome: Outcome
    detail: str = ""  # the server's reply or what failed; never the mail's content
