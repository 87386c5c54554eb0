"""The soak's audit: every store read, every check run, one JSON-able report.

`audit(platform_env, history_path, now)` reads each part's database as its owner (the
`<PART>_MIGRATION_DATABASE_URL` of the platform's environment) and the sandboxes' records
over HTTP (their control tokens from the same environment), runs every check and reports
how many subjects each invariant was checked on and every violation, with its ids and what
each store says. A store that cannot be read is a violation too, not a crash.

    python -m chaos.audit [--history FILE] [--bound SECONDS]

audits the platform the environment (over deploy/local/platform.env) describes, prints the
report as JSON and exits 1 when anything is violated.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from chaos.auditor.databases import READERS, snapshot_of
from chaos.auditor.door import check_door
from chaos.auditor.findings import Findings, Violation
from chaos.auditor.history import check_history
from chaos.auditor.inventory import check_inventory
from chaos.auditor.mail import check_mail
from chaos.auditor.money import check_money
from chaos.auditor.operations import check_operations
from chaos.auditor.passes import check_passes
from chaos.auditor.providers import READABLE, read_providers
from chaos.auditor.snapshots import Rules, Stores
from chaos.history import History, read_history

PLATFORM_ENV = Path(__file__).resolve().parents[1] / "deploy/local/platform.env"
DEFAULT_BOUND = timedelta(seconds=120)
STORES_READABLE = "stores_readable"


@dataclass
class AuditReport:
    now: datetime
    checks_run: int
    checked: dict[str, int]
    violations: list[Violation] = field(default_factory=list)
    history_truncated_tail: bool = False

    @property
    def clean(self) -> bool:
        return not self.violations

    def to_json(self) -> dict[str, Any]:
        return {
            "now": self.now.isoformat(),
            "checks_run": self.checks_run,
            "violations_found": len(self.violations),
            "checked": self.checked,
            "violated": dict(Counter(v.invariant for v in self.violations)),
            "violations": [asdict(v) for v in self.violations],
            "history_truncated_tail": self.history_truncated_tail,
        }


def run_checks(stores: Stores, history: History) -> Findings:
    """Every check over the snapshots: pure, so a test calls it on hand-built ones."""
    findings = Findings()
    findings.checking(READABLE)
    findings.violations.extend(stores.unreadable)
    for check in (
        check_inventory,
        check_money,
        check_passes,
        check_door,
        check_mail,
        check_operations,
    ):
        findings.merge(check(stores))
    return findings.merge(check_history(stores, history))


def rules_of(env: Mapping[str, str], bound: timedelta = DEFAULT_BOUND) -> Rules:
    lead = float(env.get("ACCESS_ACTIVATION_LEAD_SECONDS") or 900)
    return Rules(bound, timedelta(seconds=lead), env.get("ACCESS_ALIAS_PREFIX") or "liftfit")


async def read_stores(env: Mapping[str, str], now: datetime, rules: Rules) -> Stores:
    stores = Stores(now=now, rules=rules)
    for part, read in READERS.items():
        try:
            async with snapshot_of(env, part) as connection:
                await read(connection, stores)
        except Exception as why:  # an unreadable store is reported, and the others still read
            what = f"{type(why).__name__}: {str(why)[:300]}"
            stores.unreadable.append(Violation(STORES_READABLE, {"store": part}, {part: what}))
    await read_providers(env, stores)  # after notify: it looks up each delivery's mail
    return stores


async def audit(
    platform_env: Mapping[str, str],
    history_path: Path | None,
    now: datetime | None = None,
    bound: timedelta = DEFAULT_BOUND,
) -> AuditReport:
    env = with_local_defaults(platform_env)
    moment = now or datetime.now(UTC)
    stores = await read_stores(env, moment, rules_of(env, bound))
    history = read_history(history_path) if history_path else History()
    findings = run_checks(stores, history)
    checked = dict(sorted(findings.checked.items()))
    return AuditReport(
        moment, sum(checked.values()), checked, findings.violations, history.truncated_tail
    )


def with_local_defaults(env: Mapping[str, str]) -> dict[str, str]:
    """The environment over the local run's settings, as scripts/platform.sh merges them."""
    merged: dict[str, str] = {}
    if PLATFORM_ENV.exists():
        for line in PLATFORM_ENV.read_text().splitlines():
            name, equals, value = line.partition("=")
            if equals and not name.startswith("#"):
                merged[name.strip()] = value.strip()
    return merged | dict(env)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=Path, default=None)
    parser.add_argument("--bound", type=float, default=DEFAULT_BOUND.total_seconds())
    arguments = parser.parse_args(argv)
    report = asyncio.run(
        audit(os.environ, arguments.history, bound=timedelta(seconds=arguments.bound))
    )
    json.dump(report.to_json(), sys.stdout, indent=2)
    print()
    for violation in report.violations:
        print(violation.line(), file=sys.stderr)
    return 0 if report.clean else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
