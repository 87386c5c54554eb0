"""The gateway's rate limits: writes per caller and per client address, PIN reads per
booking. Past a limit the answer is 429 `rate_limited` with `Retry-After`; nothing was done.

A write is a POST, PUT, PATCH or DELETE under `/v1`, except the card gateway's
notification: its signature authenticates it, and it comes from the provider's few
addresses, so a limit by address would drop payments. The address is the ASGI client's:
the peer's, or the client's as a proxy named in GATEWAY_TRUSTED_PROXIES says it.

Settings (per minute, and how many at once): GATEWAY_WRITES_PER_CALLER_PER_MINUTE (60) and
_BURST (30); GATEWAY_WRITES_PER_ADDRESS_PER_MINUTE (600) and _BURST (200), higher, since
many callers may share an address; GATEWAY_PIN_READS_PER_BOOKING_PER_MINUTE (10) and
_BURST (5).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from prometheus_client import Counter

from gateway_bff.problems import Problem, too_many_requests
from gateway_bff.throttle import Rate, TokenBuckets, Verdict
from servicekit import config

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
NOTIFICATIONS = "/v1/payments/notifications"
REFUSED = Counter(
    "liftfit_http_rate_limited",
    "Requests refused by a rate limit (429), by limit: caller, address or pin_reads",
    ["limit"],
)


# The defaults: a person books, cancels or moves a few times a minute; many may share an
# address (an office, a mobile carrier's NAT); a PIN is read a few times per visit.
WRITES_PER_CALLER = Rate(per_minute=60, burst=30)
WRITES_PER_ADDRESS = Rate(per_minute=600, burst=200)
PIN_READS_PER_BOOKING = Rate(per_minute=10, burst=5)


def is_limited_write(method: str, path: str) -> bool:
    return method.upper() in WRITE_METHODS and path.startswith("/v1/") and path != NOTIFICATIONS


@dataclass(frozen=True)
class LimitSettings:
    writes_per_caller: Rate = WRITES_PER_CALLER
    writes_per_address: Rate = WRITES_PER_ADDRESS
    pin_reads_per_booking: Rate = PIN_READS_PER_BOOKING

    @classmethod
    def from_env(cls) -> LimitSettings:
        return cls(
            writes_per_caller=_rate("GATEWAY_WRITES_PER_CALLER", WRITES_PER_CALLER),
            writes_per_address=_rate("GATEWAY_WRITES_PER_ADDRESS", WRITES_PER_ADDRESS),
            pin_reads_per_booking=_rate("GATEWAY_PIN_READS_PER_BOOKING", PIN_READS_PER_BOOKING),
        )


def _rate(prefix: str, default: Rate) -> Rate:
    return Rate(
        per_minute=config.integer(f"{prefix}_PER_MINUTE", default.per_minute, minimum=1),
        burst=config.integer(f"{prefix}_BURST", default.burst, minimum=1),
    )


@dataclass
class Limits:
    settings: LimitSettings = field(default_factory=LimitSettings)
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        self._by_caller = TokenBuckets(self.settings.writes_per_caller, self.clock)
        self._by_address = TokenBuckets(self.settings.writes_per_address, self.clock)
        self._pin_reads = TokenBuckets(self.settings.pin_reads_per_booking, self.clock)

    def write_by_address(self, address: str) -> None:
        _admit(self._by_address.take(address), "address", "writes from your address")

    def write_by_caller(self, user: str) -> None:
        _admit(self._by_caller.take(user), "caller", "your writes")

    def pin_read(self, booking_id: str) -> Verdict:
        """The verdict, for the route to record a refusal before it raises `refusal()`."""
        return self._pin_reads.take(booking_id)


def refusal(verdict: Verdict, limit: str, what: str) -> Problem:
    REFUSED.labels(limit).inc()
    detail = f"too many {what}; try again in {verdict.retry_after_s} s"
    return too_many_requests(verdict.retry_after_s, detail)


def _admit(verdict: Verdict, limit: str, what: str) -> None:
    if not verdict.admitted:
        raise refusal(verdict, limit, what)
