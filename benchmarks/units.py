"""What the card saga asks of the platform's parts, counted by the parts themselves.

`make bench-saga` reads each service's and the gateway's /metrics before and after a loop
and divides what the counters gained by the sagas: the gRPC calls the services answered,
the Kafka deliveries their consumers took (the gateway's booking memory's too), the calls
to the card and lock providers, the mails sent, the gateway's HTTP requests. Beside them,
the requests the customers made to the sandboxes themselves (the hosted payment page, the
lock's door, the mail box). The saga floor (benchmarks/saga_floor.py) prices each kind.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import httpx
from prometheus_client.parser import text_string_to_metric_families

# Each kind of work and the counters (sample names, with a label to match or None) whose
# sum counts it.
KINDS: dict[str, tuple[tuple[str, tuple[str, str] | None], ...]] = {
    "grpc_calls": (("liftfit_grpc_server_requests_total", None),),
    "deliveries": (
        ("liftfit_inbox_applied_total", None),
        ("liftfit_inbox_ignored_total", None),
        ("liftfit_inbox_duplicates_total", None),
        ("liftfit_inbox_parked_total", None),
        ("liftfit_gateway_booking_changes_total", None),
    ),
    "provider_http_calls": (
        ("liftfit_provider_calls_total", ("provider", "card_gateway")),
        ("liftfit_provider_calls_total", ("provider", "lock_provider")),
    ),
    "mails": (("liftfit_provider_calls_total", ("provider", "mail")),),
    "gateway_http_requests": (("liftfit_http_requests_total", None),),
}
Counts = dict[str, float]


def counted(exposition: str) -> Counts:
    """The kinds of work one /metrics page has counted so far."""
    counts = dict.fromkeys(KINDS, 0.0)
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            for kind, counters in KINDS.items():
                if any(_matches(sample.name, sample.labels, c) for c in counters):
                    counts[kind] += sample.value
    return counts


def _matches(
    name: str, labels: Mapping[str, str], counter: tuple[str, tuple[str, str] | None]
) -> bool:
    wanted, label = counter
    return name == wanted and (label is None or labels.get(label[0]) == label[1])


def summed(pages: Iterable[Counts]) -> Counts:
    total = dict.fromkeys(KINDS, 0.0)
    for page in pages:
        for kind, value in page.items():
            total[kind] = total.get(kind, 0.0) + value
    return total


def gained(before: Counts, after: Counts) -> Counts:
    """What the counters gained between two readings."""
    return {kind: after[kind] - before.get(kind, 0.0) for kind in after}


async def read(urls: Iterable[str]) -> Counts:
    """The platform's counts now: every part's /metrics, summed."""
    pages = []
    async with httpx.AsyncClient(timeout=10) as client:
        for url in urls:
            page = await client.get(url)
            page.raise_for_status()
            pages.append(counted(page.text))
    return summed(pages)
