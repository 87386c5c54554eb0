"""The timer runner's map from timer kind to handler, each joining the runner's transaction."""

from __future__ import annotations

from servicekit.timers import TimerHandler
from servicekit.unit_of_work import bind_timers
from services.booking.service_layer.timer_handlers import release_unpaid_hold
from services.booking.service_layer.unit_of_work import RELEASE_UNPAID_HOLD, UnitOfWorkFactory


def timer_handlers(uows: UnitOfWorkFactory) -> dict[str, TimerHandler]:
    return bind_timers(uows, {RELEASE_UNPAID_HOLD: release_unpaid_hold})
