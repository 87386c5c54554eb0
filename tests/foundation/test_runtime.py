"""A started service's cycle collector: what it holds for good is frozen, young
collections wait longer, and garbage made afterwards is still collected."""

from __future__ import annotations

import json
import subprocess
import sys

from servicekit.runtime import YOUNG_COLLECTION_AFTER

# Run in a fresh interpreter: freezing this test process's heap would keep its garbage.
_PROBE = """
import gc, json, weakref
from servicekit.runtime import settle_garbage_collector

class Node:
    pass

settle_garbage_collector()
frozen, threshold = gc.get_freeze_count(), gc.get_threshold()[0]
cycle = Node(); cycle.itself = cycle
alive = weakref.ref(cycle)
del cycle
gc.collect()
print(json.dumps({"frozen": frozen, "threshold": threshold, "cycle_kept": alive() is not None}))
"""


def test_a_started_service_freezes_its_heap_and_still_collects_new_cycles() -> None:
    ran = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    seen = json.loads(ran.stdout)
    assert seen["frozen"] > 10_000, "the imported modules' objects are frozen"
    assert seen["threshold"] == YOUNG_COLLECTION_AFTER
    assert seen["cycle_kept"] is False, "a cycle made after settling is still collected"
