"""The statistics every benchmark reports its latencies with, defined once so that a p99 in
one benchmark's JSON line means what it means in another's.

Nearest rank, not interpolation: a percentile is always a latency that was measured, and
with a thousand answers the two differ by less than the run-to-run noise.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def percentile(values: Iterable[float], share: float) -> float:
    """The nearest-rank percentile: the smallest value that `share` of them do not exceed;
    0 for no values (a load with no answers prints zeros rather than failing)."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]
