"""Notification signatures: ``Gateway-Signature: t=<unix>,v1=<hex>[,v1=<hex>...]``.

The timestamp is part of the signed payload so a receiver can reject replays of old
notifications. One ``v1`` per configured secret lets a merchant rotate its secret:
during the overlap the notification verifies against either the old or the new one.
"""

from __future__ import annotations

import hashlib
import hmac

HEADER = "Gateway-Signature"


def sign(body: bytes, secrets: list[str], timestamp: int) -> str:
    """The ``Gateway-Signature`` header value for ``body`` sent at ``timestamp``."""
    parts = [f"t={timestamp}"]
    parts += [f"v1={_digest(secret, timestamp, body)}" for secret in secrets]
    return ",".join(parts)


def verify(header: str, body: bytes, secret: str, now: int, tolerance_s: int = 300) -> bool:
    """True if one of the header's ``v1`` signatures is ``secret``'s and ``t`` is recent."""
    timestamp, signatures = parse(header)
    if timestamp is None or abs(now - timestamp) > tolerance_s:
        return False
    expected = _digest(secret, timestamp, body)
    return any(hmac.compare_digest(expected, candidate) for candidate in signatures)


def parse(header: str) -> tuple[int | None, list[str]]:
    """Split a header value into its timestamp and its ``v1`` signatures."""
    timestamp: int | None = None
    signatures: list[str] = []
    for item in header.split(","):
        name, _, value = item.strip().partition("=")
        if name == "t" and value.isdigit():
            timestamp = int(value)
        elif name == "v1":
            signatures.append(value)
    return timestamp, signatures


def _digest(secret: str, timestamp: int, body: bytes) -> str:
    payload = f"{timestamp}.".encode() + body
    return hmac.new(secret.encode(), payload, hashlib.sha256).hexdigest()
