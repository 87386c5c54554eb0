"""The notify service's durable jobs. A send is an outbound job: it reads the delivery,
calls the access service and the mail server with no transaction held, and applies the
answer in a new transaction that changes the delivery only if it is still as expected."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from servicekit.retry import RetryPolicy
from services.notify.service_layer.unit_of_work import UnitOfWork

SEND: Final = "notify.send"  # outbound: one try at the mail server; aggregate: delivery key
# outbound: one question to the provider's log about an `unknown` delivery; same aggregate
RECOVER: Final = "notify.recover"


@dataclass(frozen=True)
class JobPolicy:
    retries: RetryPolicy  # of one delivery: refused for now, or no server reached
    lookups: RetryPolicy | None = None  # of one `unknown` delivery; None: no provider lookup


async def schedule_send(uow: UnitOfWork, delivery_key: str) -> None:
    """The first try of a delivery's send; never a second one pending."""
    if not await uow.has_pending(SEND, delivery_key):
        await uow.schedule(SEND, delivery_key, {"try": 1})


async def schedule_recovery(uow: UnitOfWork, policy: JobPolicy, delivery_key: str) -> None:
    """The first question to the provider about an `unknown` delivery, where there is one."""
    if policy.lookups is not None and not await uow.has_pending(RECOVER, delivery_key):
        await uow.schedule(RECOVER, delivery_key, {"try": 1})
