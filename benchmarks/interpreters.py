"""Two Python interpreters side by side under the same checkouts: which costs booking less.

    .venv/bin/python -m benchmarks.interpreters OTHER_PYTHON

OTHER_PYTHON is a virtual environment's python with requirements.lock installed, made on
the interpreter to compare (`python3.11 -m venv DIR`, `DIR/bin/pip install -r
requirements.lock`, and the repository on its path, as the Makefile's install puts it).

Runs `make bench-booking`'s platform configuration (benchmarks/booking.py) with its two
replicas on different interpreters, one on this one and one on OTHER_PYTHON. They share
the port, the database, the broker and the moment, so the machine's speed, which moves by
up to a factor of two within the hour, moves for both alike; compared one run after the
other, the two would differ by more than the interpreters do. Each replica's CPU per
checkout is its own process's CPU over the Checkout calls its /metrics counted while
ghz's 32 clients ran.

The replica started first leads the relay and publishes every checkout's event, so it
spends more per checkout than the other whatever it runs on: the interpreters take turns
starting first, round by round, and their ratio is the geometric mean of the rounds'
ratios, in which the leader's extra work cancels. BENCH_ROUNDS rounds (4; keep it even),
each on a fresh database and topics; prints each round and the medians; the last line is
one JSON object.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from benchmarks import booking
from benchmarks.jaeger import Collector, running_collector
from servicekit.runtime import run_event_loop
from tests.support.infrastructure import (
    Infrastructure,
    MigratedTemplates,
    drop_database,
    ensure_infrastructure,
)

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "4"))


async def _rounds(
    infra: Infrastructure, templates: MigratedTemplates, pythons: tuple[str, str]
) -> dict[str, list[float]]:
    per_checkout: dict[str, list[float]] = {python: [] for python in pythons}
    with tempfile.TemporaryDirectory(prefix="bench-interpreters-") as folder:
        async with running_collector(Path(folder)) as collector:
            for number in range(1, ROUNDS + 1):
                order = pythons if number % 2 else pythons[::-1]
                name = f"bench_interpreters_{uuid.uuid4().hex[:8]}"
                try:
                    url = templates.database("booking", name)
                    measured = await booking.measure_checkouts(
                        url, infra, booking.PLATFORM, collector, Path(folder), order
                    )
                finally:
                    drop_database(infra.pg_admin_dsn, name)
                for place, share in enumerate(measured.replicas):
                    per_checkout[share.python].append(share.cpu_ms_per_checkout)
                    print(
                        f"round {number}: {share.python} ({'first' if place == 0 else 'second'})"
                        f": {share.checkouts} checkouts, {share.cpu_ms_per_checkout:.3f} ms of"
                        " its CPU each",
                        flush=True,
                    )
    return per_checkout


def summary(per_checkout: dict[str, list[float]], pythons: tuple[str, str]) -> dict[str, Any]:
    """Each interpreter's rounds and median, and the other's CPU per checkout over this
    one's: the geometric mean of the rounds' ratios (each round one measurement of both)."""
    this, other = pythons
    medians = {python: statistics.median(per_checkout[python]) for python in pythons}
    ratios = [o / t for t, o in zip(per_checkout[this], per_checkout[other], strict=True) if t]
    return {
        "interpreters": list(pythons),
        "cpu_ms_per_checkout": {p: [round(v, 3) for v in per_checkout[p]] for p in pythons},
        "median_cpu_ms_per_checkout": {p: round(m, 3) for p, m in medians.items()},
        "other_over_this": round(statistics.geometric_mean(ratios), 3) if ratios else None,
    }


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    if not Collector.built():
        raise SystemExit("the Jaeger program is missing: `make bench-booking` builds it")
    pythons = (sys.executable, sys.argv[1])
    if os.path.realpath(pythons[0]) == os.path.realpath(pythons[1]):
        raise SystemExit(f"{sys.argv[1]} is the interpreter running this: name another one")
    infra = ensure_infrastructure()
    templates = MigratedTemplates(infra.pg_admin_dsn)
    try:
        per_checkout = run_event_loop(_rounds(infra, templates, pythons))
    finally:
        templates.drop_all()
    figures = summary(per_checkout, pythons)
    for python, median in figures["median_cpu_ms_per_checkout"].items():
        print(f"median, {python}: {median:.3f} ms of booking's CPU per checkout")
    print(f"{pythons[1]} over {pythons[0]}: {figures['other_over_this']}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
