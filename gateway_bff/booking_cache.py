"""The bookings this gateway read lately, kept for a moment so that a page polling one
booking costs the services nothing (decision 0008).

A booking's resource is composed from three services (gateway_bff.routes.bookings); what
is kept is that composed answer, as the bytes sent, for at most `ttl_s`. Two things end an
entry sooner: a change to the booking, heard from the services' events
(gateway_bff.booking_changes), and a write through this gateway. A read that overlapped a
change is answered but not kept: it may have read the state before the change, and the
change's event has already gone by. So an answer is never older than `ttl_s`, and after
a change is heard no read started before it is served again.

Pure and in memory: each replica keeps its own, and loses nothing by losing it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

Clock = Callable[[], float]


@dataclass(frozen=True)
class Kept:
    org_id: str
    body: bytes
    read_at: float  # the clock's time when the services were asked

    def age_s(self, now: float) -> float:
        return max(0.0, now - self.read_at)


@dataclass(eq=False)  # each reading is itself, even when two look alike
class Reading:
    """A read of the services under way; `overlapped` once a change was heard during it."""

    booking_id: str
    started_at: float
    overlapped: bool = False


class BookingCache:
    def __init__(self, ttl_s: float, max_entries: int = 10_000, clock: Clock = time.monotonic):
        self.ttl_s = ttl_s
        self._max_entries = max_entries
        self._clock = clock
        self._kept: OrderedDict[str, Kept] = OrderedDict()
        self._readings: dict[str, list[Reading]] = {}

    @property
    def enabled(self) -> bool:
        return self.ttl_s > 0

    def now(self) -> float:
        return self._clock()

    def get(self, org_id: str, booking_id: str) -> Kept | None:
        """The kept answer, if it is this organisation's and young enough. Another
        organisation's caller is sent to the services, which answer not_found."""
        kept = self._kept.get(booking_id)
        if kept is None or kept.org_id != org_id:
            return None
        if kept.age_s(self._clock()) >= self.ttl_s:
            del self._kept[booking_id]
            return None
        return kept

    def start_reading(self, booking_id: str) -> Reading:
        reading = Reading(booking_id, self._clock())
        self._readings.setdefault(booking_id, []).append(reading)
        return reading

    def finish_reading(self, reading: Reading, org_id: str | None, body: bytes | None) -> None:
        """Keeps what the read answered (`body` None: it failed, nothing is kept) unless a
        change was heard while it ran."""
        readings = self._readings.get(reading.booking_id, [])
        if reading in readings:
            readings.remove(reading)
        if not readings:
            self._readings.pop(reading.booking_id, None)
        if body is None or org_id is None or reading.overlapped or not self.enabled:
            return
        self._kept[reading.booking_id] = Kept(org_id, body, reading.started_at)
        self._kept.move_to_end(reading.booking_id)
        while len(self._kept) > self._max_entries:
            self._kept.popitem(last=False)

    def forget(self, booking_id: str) -> None:
        """The booking changed: its kept answer goes, and reads under way are not kept."""
        self._kept.pop(booking_id, None)
        for reading in self._readings.get(booking_id, ()):
            reading.overlapped = True

    def forget_all(self) -> None:
        """Changes may have gone unheard (the listener started again): nothing kept stays."""
        self._kept.clear()
        for readings in self._readings.values():
            for reading in readings:
                reading.overlapped = True

    def __len__(self) -> int:
        return len(self._kept)
