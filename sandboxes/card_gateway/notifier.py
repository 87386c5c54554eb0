"""Sends signed ``payment.updated`` notifications to the merchant, misbehaving on request.

Delivery always happens in background tasks: a real provider never makes the customer's
request wait for the merchant's webhook endpoint, and merchants must not rely on it.
Every delivery (including injected duplicates, drops and held ones) is logged so tests
can see exactly what the gateway did. Each delivery is written to the gateway's records as
its status changes, so a gateway started again sends what it had not finished sending
(held or under way) when its process died, as a real provider keeps retrying.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from sandboxes.records import Records

from .background import Background
from .signing import HEADER, sign
from .state import Event, Faults

DeliveryStatus = Literal["held", "sending", "sent", "failed", "dropped", "skipped"]
UNFINISHED: frozenset[DeliveryStatus] = frozenset({"held", "sending"})

# Pauses between attempts after a connection error or 5xx; a real provider retries for
# days, the sandbox only briefly so tests still observe the retry.
DEFAULT_RETRY_DELAYS = (0.2, 0.5, 1.0)
LOG_LIMIT = 1000  # enough for any test run, bounded so a long-lived sandbox stays small


@dataclass
class Delivery:
    """One HTTP delivery of one event; duplicates of an event are separate deliveries."""

    event_id: str
    copy: int  # 0 for the original, 1.. for duplicates injected by the fault
    body: bytes
    status: DeliveryStatus = "sending"
    target: str | None = None
    attempts: int = 0
    http_status: int | None = None
    error: str | None = None
    logged_at: float = field(default_factory=time.time)

    def to_api(self) -> dict[str, object]:
        return {
            "event_id": self.event_id,
            "copy": self.copy,
            "status": self.status,
            "target": self.target,
            "attempts": self.attempts,
            "http_status": self.http_status,
            "error": self.error,
            "logged_at": self.logged_at,
            "event": json.loads(self.body),
        }

    @property
    def key(self) -> str:
        return f"{self.event_id}/{self.copy}"

    def to_record(self) -> dict[str, object]:
        return {
            "event_id": self.event_id,
            "copy": self.copy,
            "body": self.body.decode(),
            "status": self.status,
            "target": self.target,
            "attempts": self.attempts,
            "http_status": self.http_status,
            "error": self.error,
            "logged_at": self.logged_at,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Delivery:
        return cls(**{**record, "body": str(record["body"]).encode()})


Batch = list[Delivery]  # one event and its duplicates


class Notifier:
    def __init__(
        self,
        secrets: Sequence[str],
        notify_url: str,
        faults: Faults,
        client: httpx.AsyncClient,
        retry_delays: Sequence[float] = DEFAULT_RETRY_DELAYS,
        clock: Callable[[], float] = time.time,
        records: Records | None = None,
    ) -> None:
        self.notify_url = notify_url
        self._secrets = list(secrets)
        self._faults = faults
        self._client = client
        self._retry_delays = tuple(retry_delays)
        self._clock = clock
        self._held: list[Batch] = []
        self._log: deque[Delivery] = deque(maxlen=LOG_LIMIT)
        self._background = Background()
        self._records = records or Records()

    def restore(self) -> int:
        """Read back the delivery log and send again every delivery left unfinished by the
        process before; returns how many."""
        unfinished: list[Batch] = []
        for record in self._records.load("delivery"):
            delivery = Delivery.from_record(record)
            self._log.append(delivery)
            if delivery.status in UNFINISHED:
                unfinished.append([delivery])
        self._release(unfinished)
        return len(unfinished)

    def publish(self, event: Event) -> None:
        """Queue ``event`` for delivery according to the current faults; never blocks."""
        body = json.dumps(event.to_body(), separators=(",", ":")).encode()
        copies = 1 + self._faults.duplicate_notifications
        batch = [Delivery(event.id, n, body) for n in range(copies)]
        self._log.extend(batch)
        if self._faults.drop_notifications:
            _mark(batch, "dropped", "dropped by the drop_notifications fault")
        elif not self.notify_url:
            _mark(batch, "skipped", "no notify_url configured")
        elif self._faults.reorder_notifications and not self._held:
            _mark(batch, "held", None)
            self._held.append(batch)
        else:
            batches = [*self._held, batch]
            self._held = []
            if self._faults.reorder_notifications:
                batches.reverse()
            self._release(batches)
        self._save(batch)

    def flush(self) -> int:
        """Release held notifications, newest first; returns how many events were held."""
        batches, self._held = self._held[::-1], []
        self._release(batches)
        return len(batches)

    def log(self) -> list[Delivery]:
        return list(self._log)

    def clear(self) -> None:
        self._held = []
        self._log.clear()
        # The gateway's reset clears the records it shares with the state.

    async def aclose(self) -> None:
        """Stop pending deliveries and close the HTTP client, which the notifier now owns."""
        await self._background.aclose()
        await self._client.aclose()

    def _release(self, batches: list[Batch]) -> None:
        if batches:
            delay = self._faults.delay_notifications_ms / 1000
            self._background.spawn(self._send(batches, self.notify_url, delay))

    async def _send(self, batches: list[Batch], url: str, delay: float) -> None:
        # One task per release, delivering in order, so a reordering is observed as such.
        await asyncio.sleep(delay)
        for batch in batches:
            for delivery in batch:
                await self._deliver(delivery, url)

    async def _deliver(self, delivery: Delivery, url: str) -> None:
        delivery.status, delivery.target = "sending", url
        if not url:
            _mark([delivery], "skipped", "no notify_url configured")
            self._save([delivery])
            return
        for pause in (*self._retry_delays, None):
            delivery.attempts += 1
            finished = await self._attempt(delivery, url)
            self._save([delivery])
            if finished:
                return
            if pause is not None:
                await asyncio.sleep(pause)
        delivery.status = "failed"
        self._save([delivery])

    def _save(self, batch: Batch) -> None:
        for delivery in batch:
            self._records.put("delivery", delivery.key, delivery.to_record())

    async def _attempt(self, delivery: Delivery, url: str) -> bool:
        """POST once; True when finished (delivered or rejected), False to retry."""
        headers = {
            "Content-Type": "application/json",
            HEADER: sign(delivery.body, self._secrets, int(self._clock())),
        }
        try:
            response = await self._client.post(url, content=delivery.body, headers=headers)
        except httpx.TransportError as exc:
            delivery.error = f"{type(exc).__name__}: {exc}"
            return False
        delivery.http_status = response.status_code
        if response.status_code >= 500:
            delivery.error = "server error"
            return False
        ok = response.is_success
        # A 4xx means the merchant refused this notification; retrying would not help.
        delivery.status, delivery.error = ("sent", None) if ok else ("failed", "rejected")
        return True


def _mark(batch: Batch, status: DeliveryStatus, error: str | None) -> None:
    for delivery in batch:
        delivery.status, delivery.error = status, error
