"""A relay in its own process, for the crash test: `python -m tests.foundation.relay_process`.

With --hang-after-ack it stops between the broker's acknowledgement and the row's update,
prints the acknowledged effect ids, and waits there to be killed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import Any

from sqlalchemy import MetaData

from servicekit import db, kafka
from servicekit.relay import OutboxRelay
from servicekit.schema import add_eventing_tables


async def _hang(rows: Sequence[Any]) -> None:
    print("acked " + " ".join(str(row.effect_id) for row in rows), flush=True)
    await asyncio.sleep(3600)


async def main(database_url: str, bootstrap: str, hang_after_ack: bool) -> None:
    tables = add_eventing_tables(MetaData())
    engine = db.make_engine(database_url, pool_size=2)
    producer = kafka.make_producer(bootstrap, "relay-process")
    await producer.start()
    relay = OutboxRelay(
        db.make_session_factory(engine),
        tables.outbox,
        kafka.ProducerLink.of(producer),
        after_broker_ack=_hang if hang_after_ack else None,
    )
    print("relay started", flush=True)
    await relay.run(asyncio.Event())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--hang-after-ack", action="store_true")
    args = parser.parse_args()
    asyncio.run(main(args.database_url, args.bootstrap, args.hang_after_ack))
    sys.exit(0)
