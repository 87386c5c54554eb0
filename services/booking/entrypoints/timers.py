"""The timer runner's map from timer kind to handler, each joining the runner's transaction."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from servicekit.timers import DueTimer, TimerHandler
from services.booking.service_layer.timer_handlers import release_unpaid_hold
from services.booking.service_layer.unit_of_work import RELEASE_UNPAID_HOLD, UnitOfWorkFactory


def timer_handlers(uows: UnitOfWorkFactory) -> dict[str, TimerHandler]:
    async def release(session: AsyncSession, timer: DueTimer) -> None:
        await release_unpaid_hold(uows.joining(session), timer)

    return {RELEASE_UNPAID_HOLD: release}
