"""Idempotency keys and request fingerprints.

The browser's key is stored only as a keyed hash: a leaked table must not let anyone
replay someone else's checkout. The fingerprint says whether a replay is the same request.
"""

from __future__ import annotations

import hashlib
import hmac

_SEPARATOR = "\x1f"  # cannot appear in a valid key, so fields never run into each other


def key_hash(secret: bytes, org_id: str, operation: str, key: str) -> bytes:
    message = _SEPARATOR.join((org_id, operation, key)).encode()
    return hmac.new(secret, message, hashlib.sha256).digest()


def fingerprint(*fields: object) -> bytes:
    return hashlib.sha256(_SEPARATOR.join(str(field) for field in fields).encode()).digest()
