"""Verifying the gateway's notification signature, as a pure function.

Header: ``t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">``, with one v1 per
secret the gateway signs with, so a rotation overlaps: either secret is accepted.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from services.payment.domain.errors import InvalidSignature

TOLERANCE_S = 300


def verify_signature(
    header: str, body: bytes, secrets: Sequence[str], now: int, tolerance_s: int = TOLERANCE_S
) -> None:
    """Returns when one v1 matches one secret and t is within the tolerance; else raises."""
    timestamp, candidates = _parse(header)
    if timestamp is None or not candidates:
        raise InvalidSignature("malformed signature header")
    if abs(now - timestamp) > tolerance_s:
        raise InvalidSignature("signature timestamp outside the tolerance")
    expected = [_digest(secret, timestamp, body) for secret in secrets]
    # Every pair is compared in constant time, and all of them, so timing says nothing.
    matches = [hmac.compare_digest(e, c.encode()) for e in expected for c in candidates]
    if not any(matches):
        raise InvalidSignature("no signature matches")


def sign(body: bytes, secrets: Sequence[str], timestamp: int) -> str:
    """The header a sender would produce; used by tests and by the docs' examples."""
    parts = [f"t={timestamp}"]
    parts += [f"v1={_digest(secret, timestamp, body).decode()}" for secret in secrets]
    return ",".join(parts)


def _parse(header: str) -> tuple[int | None, list[str]]:
    timestamp: int | None = None
    candidates: list[str] = []
    for item in header.split(","):
        name, _, value = item.strip().partition("=")
        if name == "t" and value.isdigit():
            timestamp = int(value)
        elif name == "v1" and value:
            candidates.append(value)
    return timestamp, candidates


def _digest(secret: str, timestamp: int, body: bytes) -> bytes:
    payload = f"{timestamp}.".encode() + body
    return hmac.new(secret.encode(), payload, hashlib.sha256).hexdigest().encode()
