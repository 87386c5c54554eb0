"""The durable jobs of the access service, each written in the transaction that decided it.

Every provider call is an outbound job carrying the state it expects to find: an
activation carries its grant, provision and window; a removal (a destructive job) also
the provider's id of the code it removes. Each does nothing when what it expects changed.
Tries are counted in `expected` and bounded by `JobPolicy`; used up, a job opens an
incident for an operator.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from servicekit.retry import RetryPolicy
from services.access.domain.model import Activation, CodeToRemove, Grant
from services.access.service_layer.unit_of_work import UnitOfWork

ACTIVATE: Final = "access.activate"  # outbound: create the code in the activation window
REMOVE_CODE: Final = "access.remove_code"  # outbound, destructive: remove one code
END_OF_WINDOW: Final = "access.end_of_window"  # the grant's window is over: revoke it
DRIFT_CHECK: Final = "access.drift_check"  # recurring: books a drift run
DRIFT_RUN: Final = "access.drift_run"  # outbound: compare grants with the provider's codes
RESEAL_PINS: Final = "access.reseal_pins"  # recurring: re-encrypt under the current key


@dataclass(frozen=True)
class JobPolicy:
    retries: RetryPolicy  # of one provider job
    drift_every_s: float = 300.0
    reseal_every_s: float = 600.0
    activation_grace_s: float = 120.0  # a planned grant this late with no job is drift
    revocation_overdue_s: float = 600.0  # a revocation unconfirmed this long is drift


async def schedule_activation(
    uow: UnitOfWork, grant: Grant, provision_id: str = "", due_at: datetime | None = None
) -> None:
    """The activation job of a provision (the grant's current one unless named) at the start
    of the activation window, or now if it has begun; never a second one pending."""
    provision_id = provision_id or grant.provision_id
    if await uow.has_pending(ACTIVATE, provision_id):
        return
    start = grant.window.activation_at(uow.policy.activation_lead)
    due = due_at or max(start, datetime.now(UTC))
    order = Activation(grant.grant_id, provision_id, grant.window)
    await uow.schedule(ACTIVATE, provision_id, {**order.to_json(), "try": 1}, due_at=due)


async def schedule_removal(uow: UnitOfWork, order: CodeToRemove) -> None:
    if not await uow.has_pending(REMOVE_CODE, order.provider_code_id):
        await uow.schedule(REMOVE_CODE, order.provider_code_id, {**order.to_json(), "try": 1})


async def schedule_end_of_window(uow: UnitOfWork, grant: Grant) -> None:
    expected = {"grant_id": grant.grant_id, **grant.window.to_json()}
    await uow.schedule(END_OF_WINDOW, grant.grant_id, expected, due_at=grant.window.valid_to)
