"""Token buckets: one per key (a caller, an address, a booking), each holding at most
`burst` tokens and refilled at `per_minute`; a request takes one or is refused with the
seconds until one is there.

In memory, per gateway process: with n replicas a client gets at most n times the rate,
which is all a limit per process can promise, and no request waits on a shared store.
A bucket that has refilled to full is the same as no bucket, so it is forgotten: memory
holds only recently active keys, and at most `max_keys` of them (the least recently used
go first, so a flood of new addresses cannot grow it).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

MAX_KEYS = 100_000


@dataclass(frozen=True)
class Rate:
    per_minute: int
    burst: int


@dataclass(frozen=True)
class Verdict:
    admitted: bool
    retry_after_s: int = 0  # whole seconds, at least 1 when refused
    refused_in_a_row: int = 0  # refusals since the key was last admitted, this one included


@dataclass
class _Bucket:
    tokens: float
    at: float
    refused: int = 0


class TokenBuckets:
    def __init__(
        self,
        rate: Rate,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = MAX_KEYS,
    ) -> None:
        self.rate = rate
        self._per_s = rate.per_minute / 60
        self._full_after_s = rate.burst / self._per_s
        self._clock = clock
        self._max_keys = max_keys
        # Ordered by last use: every take moves its key to the end.
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def take(self, key: str) -> Verdict:
        now = self._clock()
        self._forget_idle(now)
        bucket = self._buckets.pop(key, None) or _Bucket(float(self.rate.burst), now)
        bucket.tokens = min(self.rate.burst, bucket.tokens + (now - bucket.at) * self._per_s)
        bucket.at = now
        self._buckets[key] = bucket
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            bucket.refused = 0
            return Verdict(admitted=True)
        bucket.refused += 1
        wait_s = (1 - bucket.tokens) / self._per_s
        return Verdict(False, max(1, math.ceil(wait_s)), bucket.refused)

    def __len__(self) -> int:
        return len(self._buckets)

    def _forget_idle(self, now: float) -> None:
        while self._buckets:
            key, oldest = next(iter(self._buckets.items()))
            full = now - oldest.at >= self._full_after_s
            if not full and len(self._buckets) < self._max_keys:
                return
            del self._buckets[key]
