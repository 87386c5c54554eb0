"""Schemathesis, a stateful API tester, against the gateway's own /openapi.json on the whole
platform: every phase (the document's examples, coverage of each schema's edges, random
fuzzing, and stateful sequences that follow the document's links from one answer to the
next call), as the operator `ops`, with every check (`--checks all`): no 5xx, no answer that
breaks its schema, no undocumented status code or header, no schema-valid request refused
and no invalid one accepted.

The run is reproducible: the seed is fixed (SCHEMATHESIS_SEED overrides it) and the
command it ran is printed, so a failure can be replayed by hand against `make up`.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

from tests.support.platform import Platform

ST = Path(sys.executable).with_name("st")
CHECKS = "all"
HOOKS = "tests.gateway.schemathesis_hooks"
SECRETS = "CARD_GATEWAY_WEBHOOK_SECRETS"
SEED = os.environ.get("SCHEMATHESIS_SEED", "20261201")
# Two runs, each with a budget of its own: drawing text from the printable-text pattern
# (hundreds of Unicode ranges) makes the examples and coverage phases slow on a busy
# machine, and one budget for every phase could leave the stateful phase none.
PHASES = {
    "examples,coverage,fuzzing": os.environ.get("SCHEMATHESIS_MAX_TIME", "60"),
    "stateful": os.environ.get("SCHEMATHESIS_STATEFUL_MAX_TIME", "30"),
}
STATEFUL_SCENARIOS = re.compile(r"Scenarios:\s+(\d+)")


async def test_schemathesis_finds_no_server_error_schema_break_or_undocumented_status(
    platform: Platform, tmp_path: Path
) -> None:
    reports = [await _run(platform, tmp_path, phases, budget) for phases, budget in PHASES.items()]
    # The stateful run ran scenarios: a run that generated none would pass having tested none.
    scenarios = STATEFUL_SCENARIOS.search(reports[-1])
    assert scenarios is not None and int(scenarios.group(1)) > 0, reports[-1][-3000:]


async def _run(platform: Platform, tmp_path: Path, phases: str, budget: str) -> str:
    command = [
        str(ST),
        "run",
        f"{platform.gateway}/openapi.json",
        f"--phases={phases}",
        f"--checks={CHECKS}",
        "--header=X-Dev-User: ops",
        f"--max-time={budget}",
        "--workers=1",  # hypothesis' lambda descriptions are not thread-safe on 3.11
        f"--seed={SEED}",
        "--request-timeout=20",
        "--no-color",
    ]
    # The rules JSON Schema cannot state (a slot's end after its start, a notification's
    # signature) are the hooks' (tests/gateway/schemathesis_hooks.py); they sign with the
    # card gateway's secrets, as the card sandbox does.
    hooks = {
        "SCHEMATHESIS_HOOKS": HOOKS,
        SECRETS: platform.env[SECRETS],
    }
    print(" ".join([*(f"{name}={value}" for name, value in hooks.items()), *command]))
    run = await asyncio.create_subprocess_exec(
        *command,
        cwd=tmp_path,  # its cache of crashes stays out of the repository
        env={**os.environ, **hooks},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(run.communicate(), 420)
    report = out.decode(errors="replace")
    print(report)  # the whole report, beside the assertion's tail
    assert run.returncode == 0, report[-6000:]
    return report
