"""The access service's timers, in the shapes servicekit's TimerRunner calls.

Provider jobs (activation, removal, a drift run) are outbound: they open their own short
transactions around the call (service_layer.credentials, service_layer.drift_check). The
end of a window and the recurring jobs only touch the database: they run inside the
runner's transaction, committed together with their timer.
"""

from __future__ import annotations

from functools import partial

from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.recurring import RecurringJob
from servicekit.timers import DueTimer, OutboundJob
from services.access.domain.model import Window
from services.access.service_layer import grants, jobs
from services.access.service_layer.credentials import activate_credential, remove_code
from services.access.service_layer.dependencies import AccessDeps
from services.access.service_layer.drift_check import run_drift_check
from services.access.service_layer.unit_of_work import UnitOfWork

RESEAL_BATCH = 500
DRIFT = "drift"  # the aggregate of the one pending drift run


async def end_of_window(uow: UnitOfWork, timer: DueTimer) -> None:
    grant_id = str(timer.expected["grant_id"])
    await grants.end_of_window(uow, grant_id, Window.of_json(timer.expected))


async def _drift_run(deps: AccessDeps, timer: DueTimer) -> None:
    await run_drift_check(deps)


def outbound_jobs(deps: AccessDeps) -> dict[str, OutboundJob]:
    return {
        jobs.ACTIVATE: partial(activate_credential, deps),
        jobs.REMOVE_CODE: partial(remove_code, deps),
        jobs.DRIFT_RUN: partial(_drift_run, deps),
    }


def recurring_jobs(deps: AccessDeps) -> list[RecurringJob]:
    """The drift check books one run at a time; the resealing re-encrypts a batch of PINs
    sealed under an older key (a key rotation) each time it runs."""

    async def book_drift_run(session: AsyncSession) -> None:
        uow = deps.uows.joining(session)
        if not await uow.has_pending(jobs.DRIFT_RUN, DRIFT):
            await uow.schedule(jobs.DRIFT_RUN, DRIFT, {})

    async def reseal(session: AsyncSession) -> None:
        await deps.uows.joining(session).credentials.reseal_batch(RESEAL_BATCH)

    return [
        RecurringJob(jobs.DRIFT_CHECK, deps.policy.drift_every_s, book_drift_run),
        RecurringJob(jobs.RESEAL_PINS, deps.policy.reseal_every_s, reseal),
    ]
