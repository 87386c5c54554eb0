"""Keeps one reconciliation sweep scheduled while the service runs.

The sweep reschedules itself, but a sweep whose own job keeps failing ends `failed` after
its bounded tries (visible in the timers table), and lost notifications would then go
unnoticed until the next restart. Checking once per sweep interval brings a new sweep
back, so the work resumes as soon as the cause is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from sqlalchemy.exc import DBAPIError

from servicekit.outage import OutageLog
from services.payment.service_layer.dependencies import PaymentDeps
from services.payment.service_layer.timer_handlers import ensure_sweep_scheduled

log = logging.getLogger(__name__)


async def keep_sweep_scheduled(deps: PaymentDeps, stopping: asyncio.Event) -> None:
    every_s = max(1.0, deps.policy.reconcile_every_s)
    database = OutageLog(log, "sweep keeper: the database")
    while not stopping.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), every_s)
        if stopping.is_set():
            return
        try:
            await ensure_sweep_scheduled(deps)
            database.succeeded()
        except (DBAPIError, OSError) as error:
            database.failed(error)
