"""The running gateway: state, notifier and settings wired together for the HTTP layer."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from .background import Background
from .notifier import Notifier
from .settings import Settings
from .state import GatewayError, GatewayState, Outcome, Payment

log = logging.getLogger(__name__)


@dataclass
class Gateway:
    settings: Settings
    state: GatewayState
    notifier: Notifier
    background: Background

    def payment_json(self, payment: Payment) -> dict[str, object]:
        return payment.to_api(self.settings.public_url)

    def dispatch(self) -> None:
        """Hand every state change made so far to the notifier."""
        for event in self.state.drain_events():
            self.notifier.publish(event)

    def start_settlement(self, payment_id: str, outcome: Outcome) -> bool:
        """Settle as the customer's payment would; True if deferred by settle_delay_ms."""
        self.state.begin_settlement(payment_id)
        delay_ms = self.state.faults.settle_delay_ms
        if delay_ms:
            self.background.spawn(self._settle_later(payment_id, outcome, delay_ms / 1000))
        else:
            self._settle(payment_id, outcome)
        return bool(delay_ms)

    async def hang(self) -> None:
        """Hold a response back long enough for the client to give up waiting."""
        await asyncio.sleep(self.state.faults.hang_seconds)

    def reset(self) -> None:
        self.state.reset()
        self.notifier.clear()

    async def aclose(self) -> None:
        await self.background.aclose()
        await self.notifier.aclose()
        self.state.records.close()

    def _settle(self, payment_id: str, outcome: Outcome) -> None:
        self.state.complete_settlement(payment_id, outcome)
        self.dispatch()

    async def _settle_later(self, payment_id: str, outcome: Outcome, delay: float) -> None:
        await asyncio.sleep(delay)
        try:
            self._settle(payment_id, outcome)
        except GatewayError as exc:
            # Cancelled, expired or reset while waiting; the customer's attempt just lapses.
            log.info("delayed settlement of %s skipped: %s", payment_id, exc.code)


# The sandbox's dependencies are coroutines: FastAPI runs a plain function in a worker thread,
# a hop to another thread and back on every request.
async def get_gateway(request: Request) -> Gateway:
    gateway: Gateway = request.app.state.gateway
    return gateway


GatewayDep = Annotated[Gateway, Depends(get_gateway)]
