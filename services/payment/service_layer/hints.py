"""Notifications that could not be applied when they came, remembered to be applied again.

While the database (or the card gateway) cannot be reached, HandleNotification answers
UNAVAILABLE, the HTTP gateway answers 503, and the card gateway sends the notification
again, but only for a few seconds. Without a memory of it, a payment made during a longer
outage would wait for the reconciliation sweep, minutes later. Only ids from verified
notifications are remembered, and only so many: past the capacity the oldest are
forgotten, and the sweep still finds their payments.
"""

from __future__ import annotations

import logging

from servicekit.faults import Fault, classify
from services.payment.adapters.card_gateway import GatewayUnavailable

log = logging.getLogger(__name__)
CAPACITY = 10_000


class HintsToReapply:
    """Gateway payment ids, oldest first, each remembered once."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._capacity = capacity
        self._ids: dict[str, None] = {}  # a dict keeps insertion order: an ordered set
        self._overflowing = False

    def remember(self, provider_payment_id: str) -> None:
        self._ids[provider_payment_id] = None
        while len(self._ids) > self._capacity:
            del self._ids[next(iter(self._ids))]
            if not self._overflowing:
                self._overflowing = True
                log.warning(
                    "over %d notifications to apply again: the sweep settles the oldest",
                    self._capacity,
                )

    def forget(self, provider_payment_id: str) -> None:
        self._ids.pop(provider_payment_id, None)
        if not self._ids:
            self._overflowing = False

    def pending(self) -> list[str]:
        return list(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


def worth_retrying(error: BaseException) -> bool:
    """The failure says nothing about the notification: the gateway or the database could
    not be reached, or the database asked for the work to be tried again."""
    return isinstance(error, GatewayUnavailable) or classify(error) is not Fault.PERMANENT
