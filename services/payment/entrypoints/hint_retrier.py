"""Applies again the notifications that came while the database or the gateway was away.

The gateway resends a refused notification for a few seconds only. This worker tries each
remembered one once a second until it is applied, or until the gateway says the payment
does not exist; so a payment made during a database outage is settled seconds after the
database returns, not at the next reconciliation sweep.
"""

from __future__ import annotations

import asyncio
import logging

from servicekit.faults import Fault, classify
from servicekit.outage import OutageLog
from servicekit.supervision import pause
from services.payment.adapters.card_gateway import GatewayUnavailable
from services.payment.service_layer import handlers
from services.payment.service_layer.dependencies import PaymentDeps

log = logging.getLogger(__name__)
RETRY_EVERY_S = 1.0


async def reapply_hints(deps: PaymentDeps, stopping: asyncio.Event) -> None:
    database = OutageLog(log, "re-applying notifications: the database")
    while not stopping.is_set():
        await pause(stopping, RETRY_EVERY_S)
        for provider_payment_id in deps.hints.pending():
            if stopping.is_set() or not await _reapply(deps, provider_payment_id, database):
                break  # the rest waits for the next round


async def _reapply(deps: PaymentDeps, provider_payment_id: str, database: OutageLog) -> bool:
    """True when the hint is done with (applied or dropped); False when it must wait."""
    try:
        await handlers.apply_hint(deps, provider_payment_id)
    except GatewayUnavailable:  # the gateway adapter logs its outage
        return False
    except Exception as error:
        fault = classify(error)
        if fault is Fault.OUTAGE:
            database.failed(error)
        if fault is not Fault.PERMANENT:
            return False
        log.error(
            "notification for %s not applied, left to the sweep: %r", provider_payment_id, error
        )
    else:
        database.succeeded()
    deps.hints.forget(provider_payment_id)
    return True
