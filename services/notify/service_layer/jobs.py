"""The notify service's durable jobs. A send is an outbound job: it reads the delivery,
calls the access service and the mail server with no transaction held, and applies the
answer in a new transaction that changes the delivery only if it is still as expected."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from servicekit.retry import RetryPolicy
from services.notify.service_layer.unit_of_work import UnitOfWork

SEND: Final = "notify.send"  # outbound: one try at the mail server; aggregate: delivery key


@dataclass(frozen=True)
class JobPolicy:
    retries: RetryPolicy  # of one delivery: refused for now, or no server reached


async def schedule_send(uow: UnitOfWork, delivery_key: str) -> None:
    """The first try of a delivery's send; never a second one pending."""
    if not await uow.has_pending(SEND, delivery_key):
        await uow.schedule(SEND, delivery_key, {"try": 1})
