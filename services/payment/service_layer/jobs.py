"""The durable jobs of the payment service: every gateway call is one of them.

A job is a servicekit timer written in the transaction that decided the call is needed,
so the local commit always precedes the provider call. Its `expected` carries the
payment attempt and the try number; tries are bounded here, not by the timer runner, so
a job that keeps failing ends in an incident instead of an exception loop.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Final

from servicekit.retry import RetryPolicy
from servicekit.timers import DueTimer
from services.payment.service_layer.unit_of_work import UnitOfWork

CREATE_AT_GATEWAY: Final = "payment.create_at_gateway"
CANCEL_AT_GATEWAY: Final = "payment.cancel_at_gateway"
REFUND_AT_GATEWAY: Final = "payment.refund_at_gateway"
RECONCILE_PAYMENT: Final = "payment.reconcile"
RECONCILE_SWEEP: Final = "payment.reconcile_sweep"


@dataclass(frozen=True)
class JobPolicy:
    retry_base_s: float = 0.5
    retry_max_s: float = 30.0
    max_tries: int = 8
    reconcile_after_s: float = 300.0
    reconcile_every_s: float = 30.0

    @property
    def retries(self) -> RetryPolicy:
        return RetryPolicy(self.max_tries, self.retry_base_s, self.retry_max_s)


async def schedule_creation(uow: UnitOfWork, payment_id: uuid.UUID, attempt: int) -> None:
    await uow.schedule(CREATE_AT_GATEWAY, str(payment_id), {"attempt": attempt, "try": 1})


async def schedule_cancellation(uow: UnitOfWork, payment_id: uuid.UUID) -> None:
    await uow.schedule(CANCEL_AT_GATEWAY, str(payment_id), {"state": "cancelled", "try": 1})


async def schedule_refund(uow: UnitOfWork, payment_id: uuid.UUID) -> None:
    await uow.schedule(REFUND_AT_GATEWAY, str(payment_id), {"state": "refund_pending", "try": 1})


async def schedule_reconciliation(uow: UnitOfWork, payment_id: uuid.UUID) -> None:
    if not await uow.has_pending(RECONCILE_PAYMENT, str(payment_id)):
        await uow.schedule(RECONCILE_PAYMENT, str(payment_id), {})


async def retry_later(uow: UnitOfWork, timer: DueTimer, policy: JobPolicy) -> bool:
    """Schedules the next try of the same job; False once the tries are used up."""
    return await uow.retry_later(timer, policy.retries)
