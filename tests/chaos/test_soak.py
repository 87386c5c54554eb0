"""`make chaos` as `make test` runs it: the two-minute soak (the seed's schedule holds every
fault kind once) ends quiescent with every invariant holding; and the same soak's customers
against a build with one promise broken on purpose (tests/chaos/broken_revocation: the
access service confirms a revocation without deleting the code at the lock) end with the
audit naming that promise, with the ids, and the run failing.

Each run is `python -m chaos` in a process of its own, on a platform of its own (databases,
topics, sandboxes), as an operator runs it; its report's last line is one JSON object.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from chaos.auditor.door import NO_CODE_FOR_ENDED
from chaos.schedule import FaultKind

REPO = Path(__file__).resolve().parents[2]
BROKEN_REVOCATION = Path(__file__).with_name("broken_revocation")
SEED = int(os.environ.get("CHAOS_TEST_SEED", "20261205"))
SOAK_LIMIT_S = 1200  # far past the run's own bounds: a hang, not a slow run
# Payment re-reads a payment left pending after this long, looking this often (the soak
# waits both out after the heal point): 20 s and 5 s rather than make chaos' 60 s and 30 s
# keep the two runs short in make test.
SHORT = {"CHAOS_RECONCILE_AFTER_SECONDS": "20", "CHAOS_RECONCILE_EVERY_SECONDS": "5"}


async def test_the_two_minute_soak_injects_every_fault_kind_and_breaks_no_promise() -> None:
    status, output, report = await _soak("--minutes", "2", "--customers", "6", env=SHORT)

    assert set(report["faults"]) == {kind.value for kind in FaultKind}, output
    assert report["operations"] > 0, output
    assert report["checks"] > 0, output
    assert report["violations"] == 0, output
    assert report["quiescence_s"] is not None, output
    assert status == 0, output


async def test_the_audit_names_the_promise_a_broken_build_breaks() -> None:
    broken = {"PYTHONPATH": os.pathsep.join(filter(None, [str(BROKEN_REVOCATION), _path()]))}
    broken |= SHORT

    status, output, report = await _soak(
        "--minutes", "2", "--customers", "6", "--no-faults", env=broken
    )

    assert report["violated"].get(NO_CODE_FOR_ENDED, 0) > 0, output
    assert f"{NO_CODE_FOR_ENDED} [" in output, output  # each violation printed with its ids
    assert status == 1, output


async def _soak(*arguments: str, env: dict[str, str] | None = None) -> tuple[int, str, Any]:
    command = [sys.executable, "-m", "chaos", "--seed", str(SEED), *arguments]
    print(" ".join(command), flush=True)
    run = await asyncio.create_subprocess_exec(
        *command,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(run.communicate(), SOAK_LIMIT_S)
    output = out.decode(errors="replace")
    print(output)  # the whole report, beside an assertion's tail
    lines = output.strip().splitlines()
    assert lines, "the soak printed nothing"
    return run.returncode or 0, output[-8000:], json.loads(lines[-1])


def _path() -> str:
    return os.environ.get("PYTHONPATH", "")
