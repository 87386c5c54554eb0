"""The gateway's process settles its cycle collector as every service's does: once wired,
what it holds for good is frozen and young collections wait for YOUNG_COLLECTION_AFTER."""

from __future__ import annotations

import json
import subprocess
import sys

from servicekit.runtime import YOUNG_COLLECTION_AFTER
from tests.support import tls

# In a fresh interpreter, where freezing the heap costs no test anything; uvicorn's serve is
# replaced by a report of the collector as the gateway would start serving with it.
_PROBE = """
import asyncio, gc, json, sys
import uvicorn
from gateway_bff import main
from gateway_bff.identity import DevAuthenticator
from gateway_bff.settings import SERVICES, Settings

async def report(self, sockets=None):
    print(json.dumps({"frozen": gc.get_freeze_count(), "threshold": gc.get_threshold()[0]}))

uvicorn.Server.serve = report
settings = Settings(
    address="127.0.0.1:0",
    database_url="postgresql+psycopg://nobody:nothing@127.0.0.1:1/none",
    service_addresses={name: "127.0.0.1:1" for name in SERVICES},
    kafka_bootstrap="127.0.0.1:1",
    tls_dir=sys.argv[1],
    traces_url="http://127.0.0.1:1",
)
asyncio.run(main._serve(main.Configured(settings, DevAuthenticator())))
"""


def test_the_gateway_serves_with_its_wiring_frozen_and_young_collections_spaced() -> None:
    folder = str(tls.folder("gateway"))
    ran = subprocess.run(
        [sys.executable, "-c", _PROBE, folder],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    seen = json.loads(ran.stdout.strip().splitlines()[-1])
    assert seen["frozen"] > 10_000, "the gateway's modules and wiring are frozen"
    assert seen["threshold"] == YOUNG_COLLECTION_AFTER
