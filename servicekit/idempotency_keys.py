"""Claiming an Idempotency-Key in the service's `idempotency_keys` table (servicekit.schema).

Claiming a key inserts its row or, when the row exists, waits for the transaction that
wrote it and locks it: concurrent duplicates are serialised, not raced, and only the
expected key conflict counts as a replay (ON CONFLICT names the primary key; any other
violation is an error). A replay with another fingerprint is a conflict, never a change
(the caller's to refuse). Only the keyed hash of a key is stored, never the key. Rows are
kept as long as the resource they name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table
from sqlalchemy.ext.asyncio import AsyncSession

from servicekit import driver_sql
from servicekit.idempotency import Claim, key_hash


class IdempotencyKeys:
    """The table and the service's secret; `within(session)` claims in a transaction."""

    _COLUMNS = ("org_id", "operation", "key_hash", "fingerprint", "resource_id")

    def __init__(self, table: Table, secret: bytes) -> None:
        self.table = table
        self._secret = secret
        self.claim_sql = (
            driver_sql.insert_sql(table, self._COLUMNS)
            + " ON CONFLICT (org_id, operation, key_hash) DO NOTHING RETURNING resource_id"
        )
        self.earlier_sql = driver_sql.select_sql(
            table,
            ("fingerprint", "resource_id"),
            by=("org_id", "operation", "key_hash"),
            for_update=True,
        )

    def within(self, session: AsyncSession) -> KeysInSession:
        return KeysInSession(self, session)

    def hashed(self, org_id: str, operation: str, key: str) -> bytes:
        return key_hash(self._secret, org_id, operation, key)


class KeysInSession:
    def __init__(self, keys: IdempotencyKeys, session: AsyncSession) -> None:
        self._keys = keys
        self._session = session

    async def claim(
        self, org_id: str, operation: str, key: str, fingerprint: bytes, resource_id: str
    ) -> Claim:
        """Claims the key for `resource_id`, or returns what an earlier request claimed."""
        sent = await self.send_claim(org_id, operation, key, fingerprint, resource_id)
        return await sent.result()

    async def send_claim(
        self, org_id: str, operation: str, key: str, fingerprint: bytes, resource_id: str
    ) -> SentClaim:
        """The claim, sent; inside a pipeline (servicekit.driver_sql) it travels with the
        statements queued after it, and its result is read once the pipeline has ended."""
        keys = self._keys
        hashed = keys.hashed(org_id, operation, key)
        identity = {"org_id": org_id, "operation": operation, "key_hash": hashed}
        params = {**identity, "fingerprint": fingerprint, "resource_id": resource_id}
        inserted = await driver_sql.queue(self._session, keys.claim_sql, params)
        return SentClaim(self, identity, fingerprint, resource_id, inserted)

    async def earlier(self, identity: dict[str, Any]) -> Claim:
        """The claim an earlier request made, locked until this transaction ends."""
        row = await driver_sql.fetch_one(self._session, self._keys.earlier_sql, identity)
        assert row is not None, "a claim that found the key taken finds its row"
        return Claim(bytes(row.fingerprint), str(row.resource_id), is_new=False)


@dataclass(frozen=True)
class SentClaim:
    keys: KeysInSession
    identity: dict[str, Any]
    fingerprint: bytes
    resource_id: str
    inserted: driver_sql.Queued

    async def result(self) -> Claim:
        if self.inserted.first() is not None:
            return Claim(self.fingerprint, self.resource_id, is_new=True)
        return await self.keys.earlier(self.identity)
