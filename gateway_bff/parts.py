"""What the routes use, built once by gateway_bff.main's bootstrap() and kept on the app."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Header, Request
from prometheus_client import CollectorRegistry

from gateway_bff.booking_cache import BookingCache
from gateway_bff.drift import DriftBounds
from gateway_bff.identity import Authenticator
from gateway_bff.limits import Limits
from gateway_bff.problems import Problem, not_found
from gateway_bff.store.directory import Directory
from gateway_bff.traces import Traces
from gateway_bff.upstream import Services
from servicekit.lag import ConsumerLag
from servicekit.validation import IDEMPOTENCY_KEY, is_canonical_uuid

IDEMPOTENCY_HEADER = "Idempotency-Key"


@dataclass
class Parts:
    services: Services
    directory: Directory
    identity: Authenticator
    lag: ConsumerLag
    metrics: CollectorRegistry  # what /metrics serves
    traces: Traces  # Jaeger's query API, for the operators' console
    drift: DriftBounds = field(default_factory=DriftBounds)  # when a missing step is drift
    limits: Limits = field(default_factory=Limits)  # this process's rate limits
    # Bookings read lately (decision 0008); none kept unless bootstrap() says for how long.
    bookings: BookingCache = field(default_factory=lambda: BookingCache(ttl_s=0))


def parts_of(request: Request) -> Parts:
    parts: Parts = request.app.state.parts
    return parts


async def idempotency_key(
    key: Annotated[
        str | None,
        Header(
            alias=IDEMPOTENCY_HEADER,
            description="1 to 128 of A-Z a-z 0-9 . _ : - (400 when missing or not so)",
        ),
    ] = None,
) -> str:
    """The key, checked here so a missing or malformed one is the contract's 400 rather than
    a 422; the document declares it required (gateway_bff.app), which it is. A coroutine
    though it awaits nothing: FastAPI runs a plain function dependency in a worker thread,
    and that hand-over was a tenth of the gateway's CPU per POST."""
    if key is None:
        raise Problem(400, "idempotency_key_required", "An Idempotency-Key header is required")
    if not IDEMPOTENCY_KEY.fullmatch(key):
        raise Problem(
            400,
            "invalid_idempotency_key",
            "The Idempotency-Key header is malformed",
            "1 to 128 characters of A-Z a-z 0-9 . _ : -",
        )
    return key


def replay_headers(replayed: bool) -> dict[str, str] | None:
    """What marks an answer given again for a repeated Idempotency-Key."""
    return {"Idempotent-Replayed": "true"} if replayed else None


def known_id(value: str, what: str) -> str:
    """An id in a path: anything but a canonical UUID names nothing (404, not 422)."""
    if not is_canonical_uuid(value):
        raise not_found(f"no such {what}")
    return value
