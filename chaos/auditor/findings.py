"""What a check finds: how many subjects it checked under each invariant, and each violation
with the ids involved and what each store says about them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Violation:
    invariant: str
    ids: dict[str, str]
    what_each_store_says: dict[str, str]

    def line(self) -> str:
        ids = ", ".join(f"{name}={value}" for name, value in self.ids.items())
        says = "; ".join(f"{store}: {what}" for store, what in self.what_each_store_says.items())
        return f"{self.invariant} [{ids}] {says}"


@dataclass
class Findings:
    checked: Counter[str] = field(default_factory=Counter)
    violations: list[Violation] = field(default_factory=list)

    def checking(self, invariant: str, subjects: int = 1) -> None:
        self.checked[invariant] += subjects

    def violated(self, invariant: str, ids: dict[str, str], **stores: str) -> None:
        self.violations.append(Violation(invariant, ids, stores))

    def check(self, invariant: str, holds: bool, ids: dict[str, str], **stores: str) -> None:
        """One subject checked; a violation unless it holds."""
        self.checking(invariant)
        if not holds:
            self.violated(invariant, ids, **stores)

    def merge(self, other: Findings) -> Findings:
        self.checked.update(other.checked)
        self.violations.extend(other.violations)
        return self

    def of(self, invariant: str) -> list[Violation]:
        return [v for v in self.violations if v.invariant == invariant]
