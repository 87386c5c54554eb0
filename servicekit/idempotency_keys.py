"""Claiming an Idempotency-Key in the service's `idempotency_keys` table (servicekit.schema).

Claiming a key inserts its row or, when the row exists, waits for the transaction that
wrote it and locks it: concurrent duplicates are serialised, not raced, and only the
expected key conflict counts as a replay (ON CONFLICT names the primary key; any other
violation is an error). A replay with another fingerprint is a conflict, never a change
(the caller's to refuse). Only the keyed hash of a key is stored, never the key. Rows are
kept as long as the resource they name.
"""

from __future__ import annotations

from sqlalchemy import Table, select
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
        keys = self._keys
        hashed = keys.hashed(org_id, operation, key)
        identity = {"org_id": org_id, "operation": operation, "key_hash": hashed}
        params = {**identity, "fingerprint": fingerprint, "resource_id": resource_id}
        if await driver_sql.fetch_one(self._session, keys.claim_sql, params) is not None:
            return Claim(fingerprint, resource_id, is_new=True)
        c = keys.table.c
        row = (
            await self._session.execute(
                select(c.fingerprint, c.resource_id)
                .where(c.org_id == org_id, c.operation == operation, c.key_hash == hashed)
                .with_for_update()
            )
        ).one()
        return Claim(bytes(row.fingerprint), str(row.resource_id), is_new=False)
