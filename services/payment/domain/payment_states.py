"""The payment state machine. Transitions only move forward; anything else is a no-op.

A notification is only a hint, and hints arrive duplicated, late and out of order, so the
machine is written as "from what we hold and what the gateway says now, where may we go",
never as "the notification says X, so set X".
"""

from __future__ import annotations

from typing import Final, Literal

PaymentState = Literal[
    "pending",
    "paid",
    "failed",
    "expired",
    "cancelled",
    "refund_pending",
    "refunded",
    "refund_failed",
]

PENDING: Final = "pending"
PAID: Final = "paid"
FAILED: Final = "failed"
EXPIRED: Final = "expired"
CANCELLED: Final = "cancelled"
REFUND_PENDING: Final = "refund_pending"
REFUNDED: Final = "refunded"
REFUND_FAILED: Final = "refund_failed"

ALL_STATES: Final[tuple[PaymentState, ...]] = (
    PENDING,
    PAID,
    FAILED,
    EXPIRED,
    CANCELLED,
    REFUND_PENDING,
    REFUNDED,
    REFUND_FAILED,
)

# Cancelled and expired may still go to refund_pending: money that settles after the
# booking was given up is refunded, never used to resurrect it.
ALLOWED: Final[dict[str, frozenset[str]]] = {
    PENDING: frozenset({PAID, FAILED, EXPIRED, CANCELLED}),
    PAID: frozenset({REFUND_PENDING, REFUNDED}),
    CANCELLED: frozenset({REFUND_PENDING}),
    EXPIRED: frozenset({REFUND_PENDING}),
    REFUND_PENDING: frozenset({REFUNDED, REFUND_FAILED}),
    # An unconfirmed refund that the gateway later shows as done.
    REFUND_FAILED: frozenset({REFUNDED}),
}

_GIVEN_UP: Final = frozenset({CANCELLED, EXPIRED})


def can_move(current: str, target: str) -> bool:
    return target in ALLOWED.get(current, frozenset())


def target_for_remote(current: str, remote: str) -> str | None:
    """Where the local payment goes given the gateway's current state; None: stay."""
    if remote == PAID and current in _GIVEN_UP:
        return REFUND_PENDING
    if remote == "refunded":
        target: str = REFUNDED
    elif remote in (PAID, FAILED, EXPIRED, CANCELLED):
        target = remote
    else:
        return None
    return target if can_move(current, target) else None


def target_when_owner_gone(current: str) -> str | None:
    """The booking expired or was cancelled: stop a pending payment, refund a paid one."""
    if current == PENDING:
        return CANCELLED
    if current == PAID:
        return REFUND_PENDING
    return None
