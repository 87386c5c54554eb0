"""The payment aggregate as the service layer sees it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from servicekit.contacts import NO_CONTACT, Contact
from services.payment.domain.money import Money


@dataclass(frozen=True)
class Payment:
    payment_id: uuid.UUID
    state: str
    amount: Money  # the snapshot taken when the payment was requested; never re-read
    org_id: str
    booking_id: str | None = None
    order_id: uuid.UUID | None = None
    attempt: int = 1
    provider_payment_id: str | None = None
    checkout_url: str | None = None
    created_at: datetime | None = None  # set by the repository when read back
    updated_at: datetime | None = None
    contact: Contact = NO_CONTACT  # who gets its mails, copied when it was created

    @property
    def provider_key(self) -> str:
        """The gateway's idempotency key for this attempt: a lost response is retried safely."""
        return provider_key(self.payment_id, self.attempt)

    @property
    def refund_key(self) -> str:
        return refund_key(self.payment_id)

    @property
    def reference(self) -> str:
        """What the gateway stores with the payment, so it can be found without its id."""
        return str(self.payment_id)

    @property
    def owner_id(self) -> str:
        """The booking or order the money belongs to; also the Kafka key of its events."""
        return self.booking_id or str(self.order_id)


def provider_key(payment_id: uuid.UUID, attempt: int) -> str:
    return f"payment-{payment_id}-attempt-{attempt}"


def refund_key(payment_id: uuid.UUID) -> str:
    return f"refund-{payment_id}"


@dataclass(frozen=True)
class RemotePayment:
    """The gateway's truth about a payment, read server to server."""

    provider_payment_id: str
    reference: str
    state: str
    amount: Money
    checkout_url: str


def amount_matches(payment: Payment, remote: RemotePayment) -> bool:
    return payment.amount == remote.amount
