"""One logical request under one Idempotency-Key, in every service the same way.

A key is stored only as a keyed hash (HMAC-SHA256 with the service's secret) over the
organisation, the operation and the key: a leaked table must not let anyone replay
someone else's request, and the same key in another organisation or for another
operation is an unrelated request. Beside it is the request's fingerprint, SHA-256 of
the canonical form of every field that changes what was asked (key order and white space
never matter), and the id of what the request produced.

Pure: the hashing and the fingerprint. Claiming a key in the database is
`servicekit.idempotency_keys`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any

_SEPARATOR = "\x1f"  # cannot appear in a valid key, so the parts never run into each other


def key_hash(secret: bytes, org_id: str, operation: str, key: str) -> bytes:
    message = _SEPARATOR.join((org_id, operation, key)).encode()
    return hmac.new(secret, message, hashlib.sha256).digest()


def fingerprint(**fields: Any) -> bytes:
    """SHA-256 of the canonical JSON of the fields that make the request what it is.

    A new field that changes the intent must be added by every caller of its operation,
    or a changed request would be taken for a replay.
    """
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).digest()


@dataclass(frozen=True)
class Claim:
    fingerprint: bytes
    resource_id: str
    is_new: bool

    def matches(self, fingerprint: bytes) -> bool:
        return hmac.compare_digest(self.fingerprint, fingerprint)
