"""The counters and histograms counted where things happen, in the process's default
registry: a process is one service (or the gateway), so the scrape job tells them apart.

prometheus_client adds `_total` to a counter's name in what it serves. A family that
nothing has counted yet is served without samples (its HELP and TYPE lines only).
"""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Gauge, Histogram

# From a millisecond (a refusal, a cached read) to ten seconds (a provider near its time-out).
LATENCY_BUCKETS: Final = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)

GRPC_REQUESTS: Final = Counter(
    "liftfit_grpc_server_requests",
    "gRPC requests answered, by full method name and status code",
    ["method", "code"],
)
GRPC_DURATION: Final = Histogram(
    "liftfit_grpc_server_request_duration_seconds",
    "Time to answer a gRPC request",
    ["method"],
    buckets=LATENCY_BUCKETS,
)
RELAY_PUBLISHED: Final = Counter(
    "liftfit_relay_published", "Outbox rows the broker acknowledged", ["topic"]
)
RELAY_FAILURES: Final = Counter(
    "liftfit_relay_publish_failures",
    "Outbox rows sent that the broker did not acknowledge (refused, or its passing trouble)",
    ["topic"],
)
PRODUCER_REPLACEMENTS: Final = Counter(
    "liftfit_producer_replacements",
    "Producers replaced because the broker refused their idempotent state, by the error",
    ["error"],
)
LEASE_HELD: Final = Gauge(
    "liftfit_lease_held",
    "1 while this process holds the lease (the service's relay), 0 while it waits for it",
    ["lease"],
)
INBOX_APPLIED: Final = Counter(
    "liftfit_inbox_applied",
    "Events applied once through the inbox by their handler",
    ["topic"],
)
INBOX_IGNORED: Final = Counter(
    "liftfit_inbox_ignored",
    "Events of a type with no handler here, dropped before the database (no inbox row)",
    ["topic"],
)
INBOX_DUPLICATES: Final = Counter(
    "liftfit_inbox_duplicates", "Events delivered again and dropped by their marker", ["topic"]
)
INBOX_PARKED: Final = Counter(
    "liftfit_inbox_parked",
    "Records parked: unreadable, or their handler failed for a reason retrying cannot cure",
    ["topic"],
)
PROVIDER_CALLS: Final = Counter(
    "liftfit_provider_calls",
    "Calls to an external provider, by outcome: ok (done), refused (a definite no),"
    " unknown (no definite answer; it may or may not have happened)",
    ["provider", "operation", "outcome"],
)
PROVIDER_DURATION: Final = Histogram(
    "liftfit_provider_call_duration_seconds",
    "Time of one call to an external provider, whatever its outcome",
    ["provider", "operation"],
    buckets=LATENCY_BUCKETS,
)

# The outcomes of a provider call.
OK, REFUSED, UNKNOWN = "ok", "refused", "unknown"


def provider_call(provider: str, operation: str, outcome: str, seconds: float) -> None:
    """Counts one call to a provider (card_gateway, lock_provider, mail) and its time."""
    PROVIDER_CALLS.labels(provider, operation, outcome).inc()
    PROVIDER_DURATION.labels(provider, operation).observe(seconds)
