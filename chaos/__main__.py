"""The chaos soak, end to end: `make chaos SEED=7 MINUTES=10 CUSTOMERS=24`, or

    python -m chaos [--seed N] [--minutes M] [--customers C] [--no-faults]

(SEED, MINUTES, CUSTOMERS and CHAOS_FAULTS=off from the environment too). Starts the
platform as `make up` does (tests/support/platform.py, as benchmarks/saga.py starts it),
creates studios, each with its own lock, one-minute slots inside access's lead time, a
pass plan and one organisation per customer through the operators' API. Then the customers
(chaos.workload) and the seed's fault schedule (chaos.driver) run together; at the heal
point the customers stop and every fault is healed; the run waits, with a bound, until
every outbox is empty, every consumer lag is 0 and no timer is due; then the audit reads
every store. The report ends with one JSON line; the exit status is 1 on any violation or
when quiescence did not come.

The schedule holds every kind of fault three times in ten minutes and once in two, the
shortest soak (the one `make test` runs); `--no-faults` runs the workload, quiescence and
the audit alone, for any length. Unpaid holds run out after CHAOS_HOLD_SECONDS (120 s; the
platform's own 900 s would end few within a soak), and payment reconciles a payment left
pending after CHAOS_RECONCILE_AFTER_SECONDS (60 s, not 300 s), looking every
CHAOS_RECONCILE_EVERY_SECONDS (30 s), which the run waits out after the heal point. The ops
timelines of the bookings the audit names are saved beside the history. SIGTERM cancels the
run, which heals every fault before it ends.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from benchmarks.customers import SlotSupply, expect
from benchmarks.saga import Tally, customers_of, restart_access, sandboxes_of, studios
from chaos.audit import audit
from chaos.auditor.findings import Violation
from chaos.driver import soak
from chaos.faults import Chaos, settings_of
from chaos.history import HistoryWriter, read_history
from chaos.journal import Journal
from chaos.quiescence import NotQuiescent, Quiescence
from chaos.report import Report, failed_applies, faults_injected, operations_by_kind
from chaos.schedule import heal_at, plan
from chaos.workload import Plan, Shop, run_workload
from tests.gateway.api import OPS, Api
from tests.support.infrastructure import ensure_infrastructure
from tests.support.platform import Platform, started_platform
from tests.support.sandboxes import CONTROL_TOKEN, SandboxAuth

REPO = Path(__file__).resolve().parents[1]
SLOTS_PER_CUSTOMER_MINUTE = 25  # more than a customer takes, races and moves included
HOLD_SECONDS = os.environ.get("CHAOS_HOLD_SECONDS", "120")
# Payment re-reads a payment left pending (its notification lost) after this long, and
# looks every RECONCILE_EVERY_S: the soak waits that out after the heal point, for work the
# platform holds for later is not due and quiescence does not wait for it.
RECONCILE_AFTER_S = int(os.environ.get("CHAOS_RECONCILE_AFTER_SECONDS", "60"))
RECONCILE_EVERY_S = int(os.environ.get("CHAOS_RECONCILE_EVERY_SECONDS", "30"))
TIMELINES = 300  # of the bookings the audit names, saved for the reader
QUIESCENCE_BOUND_S = float(os.environ.get("CHAOS_QUIESCENCE_BOUND_S", "300"))
AUDIT_BOUND = timedelta(seconds=float(os.environ.get("CHAOS_AUDIT_BOUND_S", "120")))
PASS_ENTRIES = 5


def arguments(argv: list[str]) -> argparse.Namespace:
    env = os.environ
    parser = argparse.ArgumentParser(prog="python -m chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=int(env.get("SEED") or 7))
    parser.add_argument("--minutes", type=float, default=float(env.get("MINUTES") or 10))
    parser.add_argument("--customers", type=int, default=int(env.get("CUSTOMERS") or 24))
    faults_off = (env.get("CHAOS_FAULTS") or "on").strip().lower() in ("off", "0", "no")
    parser.add_argument("--no-faults", action="store_true", default=faults_off)
    return parser.parse_args(argv)


def remember_devices(platform: Platform, devices: Iterable[str]) -> None:
    """The studios' locks in the lock sandbox's own setting too: a lock sandbox the soak
    kills is started again by `platform.sh up` with this environment, and would otherwise
    come back knowing none of them (its codes and door log it keeps in its records folder)."""
    known = settings_of(platform).get("LOCK_PROVIDER_DEVICES", "")
    platform.env["LOCK_PROVIDER_DEVICES"] = ",".join(filter(None, (known, *devices)))


def studios_for(customers: int, minutes: float) -> int:
    """Enough studios (a hundred one-minute slots each, inside access's lead time) that
    the customers do not run out of slots; CHAOS_STUDIOS says otherwise."""
    if os.environ.get("CHAOS_STUDIOS"):
        return int(os.environ["CHAOS_STUDIOS"])
    return max(4, math.ceil(customers * minutes * SLOTS_PER_CUSTOMER_MINUTE / 100))


async def pass_plan(ops: Api) -> Plan:
    code = f"chaos-pass-{uuid.uuid4().hex[:8]}"
    body = {
        "plan_code": code,
        "plan_version": 1,
        "kind": "pass",
        "name": "Chaos pass",
        "price": {"amount": 90000, "currency": "CZK"},
        "entries": PASS_ENTRIES,
    }
    expect(await ops.call("POST", "/v1/ops/plans", OPS, body), 201, "pass plan")
    return Plan(code, 1)


async def run(args: argparse.Namespace, folder: Path) -> Report:
    if not args.no_faults:
        plan(args.seed, args.minutes)  # a schedule too short is refused before anything starts
    infra = ensure_infrastructure()
    history_path, journal_path = folder / "history.jsonl", folder / "journal.jsonl"
    with tempfile.TemporaryDirectory(prefix="chaos-") as state:
        overrides = {
            "BOOKING_HOLD_SECONDS": HOLD_SECONDS,
            "PAYMENT_RECONCILE_AFTER_SECONDS": str(RECONCILE_AFTER_S),
            "PAYMENT_RECONCILE_EVERY_SECONDS": str(RECONCILE_EVERY_S),
        }
        async with (
            started_platform(infra, Path(state) / "state", overrides) as platform,
            sandboxes_of(platform) as sandboxes,
            Api.at(platform.gateway) as ops,
            httpx.AsyncClient(
                base_url=platform.env["CARD_GATEWAY_URL"],
                auth=SandboxAuth(control_token=CONTROL_TOKEN),
                timeout=15,
            ) as card_control,
        ):
            count = studios_for(args.customers, args.minutes)
            devices, slots = await studios(ops, sandboxes.lock, count)
            remember_devices(platform, devices.values())
            await restart_access(platform, devices)
            pass_plan_ = await pass_plan(ops)
            say(f"{count} studios, {len(slots)} one-minute slots, plan {pass_plan_.code}")
            async with customers_of(platform, args.customers, Tally()) as customers:
                with HistoryWriter(history_path) as history:
                    shop = Shop(
                        SlotSupply(slots),
                        pass_plan_,
                        sandboxes,
                        card_control,
                        history,
                        platform.env["CARD_GATEWAY_WEBHOOK_SECRETS"].split(","),
                        customers,
                    )
                    await soak_with_customers(args, platform, shop, journal_path)
                    for what, times in shop.broken.most_common(10):
                        say(f"workload broke off {times}x: {what}")
                    if shop.slots.ran_out:
                        say("the slots ran out: customers found none free at the end")
            settle = RECONCILE_AFTER_S + RECONCILE_EVERY_S
            say(f"{settle} s for the platform's reconciliation of payments left pending")
            await asyncio.sleep(settle)
            quiet_after = await quiescence(platform)
            report = await audit(platform.env, history_path, bound=AUDIT_BOUND)
            for violation in report.violations:
                say(violation.line())
            await save_timelines(ops, report.violations, folder / "timelines.jsonl")
    journal = Journal(journal_path)
    lines = journal.lines()
    journal.close()
    return Report(
        seed=args.seed,
        minutes=args.minutes,
        customers=args.customers,
        faults=not args.no_faults,
        operations=operations_by_kind(read_history(history_path).operations),
        injected=faults_injected(lines),
        failed_applies=failed_applies(lines),
        checks_run=report.checks_run,
        violated=report.to_json()["violated"],
        quiescent_after_s=quiet_after,
        files={"history": str(history_path), "journal": str(journal_path)},
        broken_off=sum(shop.broken.values()),
        slots_ran_out=shop.slots.ran_out,
    )


async def soak_with_customers(
    args: argparse.Namespace, platform: Platform, shop: Shop, journal_path: Path
) -> None:
    """The customers until the heal point, the faults (unless off) alongside, every fault
    healed at the end however the run ends."""
    seconds = heal_at(args.minutes)
    say(f"customers and {'no ' if args.no_faults else ''}faults for {seconds:.0f} s")

    async def customers() -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(run_workload(args.seed, shop), seconds)

    journal = Journal(journal_path)
    try:
        async with asyncio.TaskGroup() as group:
            group.create_task(customers())
            if not args.no_faults:
                group.create_task(soak(Chaos(platform, journal), args.seed, args.minutes))
    finally:
        journal.close()
    say("the heal point: customers stopped, every fault healed")


async def quiescence(platform: Platform) -> float | None:
    """Seconds until the platform had nothing left to do, None when not within the bound."""
    quiet = Quiescence(settings_of(platform))
    started = time.monotonic()
    try:
        await quiet.wait(QUIESCENCE_BOUND_S)
    except NotQuiescent as late:
        say(str(late))
        return None
    finally:
        await quiet.close()
    waited = time.monotonic() - started
    say(f"quiescent after {waited:.1f} s")
    return round(waited, 1)


async def save_timelines(ops: Api, violations: list[Violation], path: Path) -> None:
    """The ops timeline of the first bookings the violations name: the databases go with
    the platform, and a reader needs each service's view to tell a defect from a mistake."""
    named = list(dict.fromkeys(v.ids["booking_id"] for v in violations if "booking_id" in v.ids))
    with path.open("w", encoding="utf-8") as out:
        for booking_id in named[:TIMELINES]:
            with contextlib.suppress(httpx.HTTPError, ValueError):
                answer = await ops.call("GET", f"/v1/ops/bookings/{booking_id}/timeline", OPS)
                out.write(json.dumps({"booking_id": booking_id, "timeline": answer.json()}) + "\n")


def say(line: str) -> None:
    print(line, flush=True)


async def main_task(args: argparse.Namespace, folder: Path) -> Report:
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    return await run(args, folder)


def main(argv: list[str]) -> int:
    args = arguments(argv)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    folder = REPO / ".local" / "chaos" / f"{stamp}-seed{args.seed}"
    folder.mkdir(parents=True, exist_ok=True)
    try:
        report = asyncio.run(main_task(args, folder))
    except asyncio.CancelledError:  # SIGTERM: the faults were healed on the way out
        print(f"cancelled; every fault healed; the journal: {folder / 'journal.jsonl'}")
        return 143
    for line in report.lines():
        print(line)
    print(json.dumps(report.to_json()))
    return 0 if report.clean else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
