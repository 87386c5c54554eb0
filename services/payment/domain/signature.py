"""Verifying the gateway's notification signature, as a pure function.

Header: ``t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">``, with one v1 per
secret the gateway signs with, so a rotation overlaps: either secret is accepted.

The header is read and its time checked before the body is even received
(`read_signature`), so a forged or stale request costs no more than its headers; every
part of it is bounded, since it comes from anyone who can reach the endpoint.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Sequence
from dataclasses import dataclass

from services.payment.domain.errors import InvalidSignature

TOLERANCE_S = 300
MAX_HEADER = 1024
MAX_SIGNATURES = 8
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Signature:
    timestamp: int
    candidates: tuple[str, ...]


def read_signature(header: str, now: int, tolerance_s: int = TOLERANCE_S) -> Signature:
    """The parsed header, if well formed and recent; raises InvalidSignature otherwise."""
    if len(header) > MAX_HEADER:
        raise InvalidSignature("signature header too long")
    timestamp: int | None = None
    candidates: list[str] = []
    for item in header.split(","):
        name, _, value = item.strip().partition("=")
        if name == "t" and _TIMESTAMP.fullmatch(value):
            timestamp = int(value)
        elif name == "v1" and _HEX_DIGEST.fullmatch(value):
            candidates.append(value)
    if timestamp is None or not candidates or len(candidates) > MAX_SIGNATURES:
        raise InvalidSignature("malformed signature header")
    if abs(now - timestamp) > tolerance_s:
        raise InvalidSignature("signature timestamp outside the tolerance")
    return Signature(timestamp, tuple(candidates))


def verify_body(signature: Signature, body: bytes, secrets: Sequence[str]) -> None:
    """Returns when one v1 matches one secret; else raises."""
    expected = [_digest(secret, signature.timestamp, body) for secret in secrets]
    # Every pair is compared in constant time, and all of them, so timing says nothing.
    matches = [hmac.compare_digest(e, c.encode()) for e in expected for c in signature.candidates]
    if not any(matches):
        raise InvalidSignature("no signature matches")


def verify_signature(
    header: str, body: bytes, secrets: Sequence[str], now: int, tolerance_s: int = TOLERANCE_S
) -> None:
    """Returns when one v1 matches one secret and t is within the tolerance; else raises."""
    verify_body(read_signature(header, now, tolerance_s), body, secrets)


def sign(body: bytes, secrets: Sequence[str], timestamp: int) -> str:
    """The header a sender would produce; used by tests and by the docs' examples."""
    parts = [f"t={timestamp}"]
    parts += [f"v1={_digest(secret, timestamp, body).decode()}" for secret in secrets]
    return ",".join(parts)


def _digest(secret: str, timestamp: int, body: bytes) -> bytes:
    payload = f"{timestamp}.".encode() + body
    return hmac.new(secret.encode(), payload, hashlib.sha256).hexdigest().encode()
