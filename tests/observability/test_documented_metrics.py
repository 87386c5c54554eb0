"""The metrics table of docs/operations.md names exactly the metrics the processes are
tested to expose (tests/observability/documented.py, which test_metrics checks against the
running platform), so the operators' reference cannot drift from what is served."""

from __future__ import annotations

import re
from pathlib import Path

from tests.observability.documented import DOCUMENTED

REPO = Path(__file__).resolve().parents[2]
TABLE_ROW = re.compile(r"^\| `(liftfit_[a-z_]+)` \|", re.M)


def test_the_operations_metrics_table_names_every_exposed_metric_and_no_other() -> None:
    in_table = set(TABLE_ROW.findall((REPO / "docs/operations.md").read_text()))
    exposed = set().union(*DOCUMENTED.values())
    assert in_table, "docs/operations.md has no metrics table"
    assert sorted(in_table ^ exposed) == []
