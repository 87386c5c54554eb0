"""One logical request under one Idempotency-Key, in every service the same way.

A key is stored only as a keyed hash (HMAC-SHA256 with the service's secret) over the
organisation, the operation and the key: a leaked table must not let anyone replay
someone else's request, and the same key in another organisation or for another
operation is an unrelated request. Beside it is the request's fingerprint, SHA-256 of
the canonical form of every field that changes what was asked (key order and white space
never matter), and the id of what the request produced.

Claiming a key inserts its row or, when the row exists, waits for the transaction that
wrote it and locks it: concurrent duplicates are serialised, not raced, and only the
expected key conflict counts as a replay (ON CONFLICT names the primary key; any other
violation is an error). A replay with another fingerprint is a conflict, never a change.
Rows are kept as long as the resource they name.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, select
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit import driver_sql

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


class IdempotencyKeys:
    """The service's `idempotency_keys` table (servicekit.schema), in the caller's transaction."""

    _COLUMNS = ("org_id", "operation", "key_hash", "fingerprint", "resource_id")

    def __init__(self, table: Table) -> None:
        self.table = table
        self._claim_sql = (
            driver_sql.insert_sql(table, self._COLUMNS)
            + " ON CONFLICT (org_id, operation, key_hash) DO NOTHING RETURNING resource_id"
        )

    async def claim(
        self,
        session: AsyncSession,
        org_id: str,
        operation: str,
        hashed_key: bytes,
        fingerprint: bytes,
        resource_id: str,
    ) -> Claim:
        """Claims the key for `resource_id`, or returns what an earlier request claimed."""
        key = {"org_id": org_id, "operation": operation, "key_hash": hashed_key}
        params = {**key, "fingerprint": fingerprint, "resource_id": resource_id}
        if await driver_sql.fetch_one(session, self._claim_sql, params) is not None:
            return Claim(fingerprint, resource_id, is_new=True)
        t = self.table.c
        row = (
            await session.execute(
                select(t.fingerprint, t.resource_id)
                .where(t.org_id == org_id, t.operation == operation, t.key_hash == hashed_key)
                .with_for_update()
            )
        ).one()
        return Claim(bytes(row.fingerprint), str(row.resource_id), is_new=False)
