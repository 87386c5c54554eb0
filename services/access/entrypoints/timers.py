"""The timer runner's transactional handlers, each joining the runner's transaction."""

from __future__ import annotations

from servicekit.timers import TimerHandler
from servicekit.unit_of_work import bind_timers
from services.access.service_layer import jobs
from services.access.service_layer.timer_handlers import end_of_window
from services.access.service_layer.unit_of_work import UnitOfWorkFactory


def timer_handlers(uows: UnitOfWorkFactory) -> dict[str, TimerHandler]:
    return bind_timers(uows, {jobs.END_OF_WINDOW: end_of_window})
