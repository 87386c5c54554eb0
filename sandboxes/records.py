"""Where a sandbox keeps its records so that a restart does not forget them.

A real provider does not forget its charges, access codes or delivered mails when one of
its processes dies, and the chaos soak (and its auditor) read those records after killing
the sandboxes. Each sandbox writes every record it changes here, keyed by its kind and its
id, and reads them all back when it starts.

One SQLite file in WAL mode: every write is its own committed transaction before the call
returns, so a SIGKILL at any moment leaves either the old record or the new one, never a
torn file. Without a folder (the tests' default) nothing is written and the sandbox keeps
its records in memory only, as it always did.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path

FILE_NAME = "records.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    seq   INTEGER PRIMARY KEY AUTOINCREMENT,
    kind  TEXT NOT NULL,
    key   TEXT NOT NULL,
    value TEXT NOT NULL,
    UNIQUE (kind, key)
)
"""


class Records:
    """The sandbox's durable records, or none at all when ``folder`` is None."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self._db: sqlite3.Connection | None = None
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            # Autocommit: each statement is committed before the sandbox answers anyone.
            db = sqlite3.connect(folder / FILE_NAME, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            # NORMAL is durable against the death of the process (the soak's SIGKILL); only
            # a crash of the machine itself could lose the last commits.
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(_SCHEMA)
            self._db = db

    @property
    def durable(self) -> bool:
        return self._db is not None

    def put(self, kind: str, key: str, value: Mapping[str, object]) -> None:
        """Write one record, replacing an earlier one of the same kind and key (whose place
        in the order it keeps)."""
        if self._db is None:
            return
        self._db.execute(
            "INSERT INTO records (kind, key, value) VALUES (?, ?, ?)"
            " ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value",
            (kind, key, json.dumps(value, separators=(",", ":"))),
        )

    def load(self, kind: str) -> Iterator[dict[str, object]]:
        """Every record of ``kind``, in the order each was first written."""
        if self._db is None:
            return
        rows = self._db.execute("SELECT value FROM records WHERE kind = ? ORDER BY seq", (kind,))
        for (value,) in rows.fetchall():
            loaded: dict[str, object] = json.loads(value)
            yield loaded

    def clear(self) -> None:
        """Forget every record: the sandbox's reset."""
        if self._db is not None:
            self._db.execute("DELETE FROM records")

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
