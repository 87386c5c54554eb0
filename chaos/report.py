"""The soak's report: the operations tried by kind and what became of them, the faults
injected by kind, the audit's checks and violations, the time to quiescence, the seed.

Pure over the history and the journal's lines, so a test builds both by hand. An
operation succeeded with a 2xx answer, was refused with a 4xx (the platform said no, as it
may: a slot taken, a booking no longer cancellable), and failed with a 5xx or no answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from chaos.history import Operation

APPLY = "apply"


@dataclass
class Outcomes:
    attempted: int = 0
    succeeded: int = 0
    refused: int = 0
    failed: int = 0

    def add(self, operation: Operation) -> None:
        self.attempted += 1
        if operation.accepted:
            self.succeeded += 1
        elif 400 <= operation.status < 500:
            self.refused += 1
        else:
            self.failed += 1


def operations_by_kind(operations: Iterable[Operation]) -> dict[str, Outcomes]:
    by_kind: dict[str, Outcomes] = {}
    for operation in operations:
        by_kind.setdefault(operation.kind.value, Outcomes()).add(operation)
    return dict(sorted(by_kind.items()))


def faults_injected(journal: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """The faults applied, by kind, as the journal's apply lines say (a failed apply too:
    its half may have happened; `failed` counts those apart)."""
    return dict(
        sorted(Counter(line["kind"] for line in journal if line["action"] == APPLY).items())
    )


def failed_applies(journal: Iterable[Mapping[str, Any]]) -> int:
    return sum(1 for line in journal if line["action"] == APPLY and line["outcome"] != "ok")


@dataclass
class Report:
    seed: int
    minutes: float
    customers: int
    faults: bool
    operations: dict[str, Outcomes]
    injected: dict[str, int]
    failed_applies: int
    checks_run: int
    violated: dict[str, int]
    quiescent_after_s: float | None  # None: not quiet within the bound
    files: dict[str, str] = field(default_factory=dict)
    broken_off: int = 0  # journeys the workload's own mistakes broke off
    slots_ran_out: bool = False

    @property
    def violations(self) -> int:
        return sum(self.violated.values())

    @property
    def clean(self) -> bool:
        return self.violations == 0 and self.quiescent_after_s is not None

    def to_json(self) -> dict[str, Any]:
        total = Outcomes()
        for outcome in self.operations.values():
            total.attempted += outcome.attempted
            total.succeeded += outcome.succeeded
            total.refused += outcome.refused
            total.failed += outcome.failed
        return {
            "seed": self.seed,
            "minutes": self.minutes,
            "customers": self.customers,
            "faults": self.injected,  # applied, by kind
            "faults_on": self.faults,
            "fault_applies_failed": self.failed_applies,
            "operations": total.attempted,
            "operations_succeeded": total.succeeded,
            "operations_refused": total.refused,
            "operations_failed": total.failed,
            "operations_by_kind": {kind: vars(o) for kind, o in self.operations.items()},
            "checks": self.checks_run,
            "violations": self.violations,
            "violated": self.violated,
            "quiescence_s": self.quiescent_after_s,
            "journeys_broken_off": self.broken_off,
            "slots_ran_out": self.slots_ran_out,
            **self.files,
        }

    def lines(self) -> list[str]:
        """The report for a reader, before the JSON line."""
        out = [f"seed {self.seed}, {self.minutes:g} minutes, {self.customers} customers"]
        out.append("operations (attempted / succeeded / refused / failed or unanswered):")
        out += [
            f"  {kind}: {o.attempted} / {o.succeeded} / {o.refused} / {o.failed}"
            for kind, o in self.operations.items()
        ]
        if self.faults:
            injected = ", ".join(f"{kind} {n}" for kind, n in self.injected.items())
            out.append(f"faults injected: {injected or 'none'}")
            out.append(f"fault applies that failed: {self.failed_applies}")
        else:
            out.append("faults: off (a workload-only run)")
        quiet = self.quiescent_after_s
        out.append(
            f"quiescent after {quiet:.1f} s" if quiet is not None else "NOT quiescent in the bound"
        )
        out.append(f"invariant checks run: {self.checks_run}; violations: {self.violations}")
        out += [f"  {invariant}: {n}" for invariant, n in self.violated.items()]
        return out
