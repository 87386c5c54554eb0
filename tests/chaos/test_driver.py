"""The driver of a fault schedule, with injectors that only record what they are asked: each
fault applied at its offset and healed after its duration, every action journalled, a
failed apply journalled and healed all the same, a fault held back until an earlier one
it contends with has healed, and everything healed at the end, even of a run cut short."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from chaos.driver import inject
from chaos.faults import Injector
from chaos.journal import Journal
from chaos.schedule import FaultKind, PlannedFault, plan
from tests.support.waiting import eventually

JITTER_S = 0.02
KILL, PAUSE, DROPS = FaultKind.PROCESS_KILL, FaultKind.CONSUMER_PAUSE, FaultKind.MAIL_REFUSED_4XX


@dataclass
class Recorder:
    """Every injector's calls, in order, as (action, kind, target)."""

    calls: list[tuple[str, str, str]] = field(default_factory=list)
    healed_everything: int = 0

    async def heal_everything(self) -> None:
        self.healed_everything += 1


@dataclass
class RecordingInjector:
    recorder: Recorder
    failing_apply: bool = False
    heal_takes_s: float = 0.0
    jitter: random.Random | None = None  # each call takes a drawn time up to JITTER_S

    async def apply(self, fault: PlannedFault) -> str:
        self.recorder.calls.append(("apply", fault.kind, fault.target))
        await self._jitter()
        if self.failing_apply:
            raise OSError("no such process")
        return "applied"

    async def heal(self, fault: PlannedFault) -> str:
        await asyncio.sleep(self.heal_takes_s)
        await self._jitter()
        self.recorder.calls.append(("heal", fault.kind, fault.target))
        return "healed"

    async def _jitter(self) -> None:
        if self.jitter is not None:
            await asyncio.sleep(self.jitter.uniform(0, JITTER_S))


def _injectors(recorder: Recorder, **special: Injector) -> dict[FaultKind, Injector]:
    return {kind: special.get(kind.value, RecordingInjector(recorder)) for kind in FaultKind}


async def test_each_fault_is_applied_at_its_offset_healed_after_its_duration_then_all_healed(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    journal = Journal(tmp_path / "faults.jsonl")
    schedule = [
        PlannedFault(0.0, KILL, "booking", 0.2),
        PlannedFault(0.1, PAUSE, "notify", 0.02),
        PlannedFault(0.15, DROPS, "mail-sandbox", 0.02, {"refuse_next": 1}),
    ]
    await inject(schedule, _injectors(recorder), journal, recorder.heal_everything, 0.3, seed=7)
    assert recorder.calls == [
        ("apply", KILL, "booking"),
        ("apply", PAUSE, "notify"),
        ("heal", PAUSE, "notify"),
        ("apply", DROPS, "mail-sandbox"),
        ("heal", DROPS, "mail-sandbox"),
        ("heal", KILL, "booking"),
    ]
    assert recorder.healed_everything == 1
    planned, *lines = journal.lines()
    assert (planned["kind"], planned["action"], planned["seed"]) == ("schedule", "plan", 7)
    assert [fault["kind"] for fault in planned["faults"]] == [KILL, PAUSE, DROPS]
    assert [(line["action"], line["fault"], line["outcome"]) for line in lines] == [
        ("apply", 0, "ok"),
        ("apply", 1, "ok"),
        ("heal", 1, "ok"),
        ("apply", 2, "ok"),
        ("heal", 2, "ok"),
        ("heal", 0, "ok"),
    ]
    assert {"at", "began_at", "elapsed_s", "kind", "target", "detail", "planned_offset"} <= set(
        lines[0]
    )
    assert all(line["began_at"] <= line["at"] for line in lines)


async def test_a_fault_that_fails_to_apply_is_journalled_and_healed_and_the_schedule_goes_on(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    journal = Journal(tmp_path / "faults.jsonl")
    broken = RecordingInjector(recorder, failing_apply=True)
    schedule = [
        PlannedFault(0.0, KILL, "booking", 0.01),
        PlannedFault(0.05, PAUSE, "notify", 0.01),
    ]
    injectors = _injectors(recorder, process_kill=broken)
    await inject(schedule, injectors, journal, recorder.heal_everything, heal_at=0.1)
    _, *lines = journal.lines()
    outcomes = [(line["kind"], line["action"], line["outcome"]) for line in lines]
    assert outcomes == [
        (KILL, "apply", "failed"),
        (KILL, "heal", "ok"),
        (PAUSE, "apply", "ok"),
        (PAUSE, "heal", "ok"),
    ]
    assert "OSError: no such process" in str(lines[0]["detail"])


async def test_a_fault_waits_until_an_earlier_one_on_its_process_has_healed_and_so_do_the_next(
    tmp_path: Path,
) -> None:
    recorder = Recorder()
    # The restart after the kill takes longer than the schedule allowed for it.
    slow = RecordingInjector(recorder, heal_takes_s=0.3)
    schedule = [
        PlannedFault(0.0, KILL, "booking", 0.01),
        PlannedFault(0.05, PAUSE, "booking", 0.01),
        PlannedFault(0.1, PAUSE, "notify", 0.01),
    ]
    injectors = _injectors(recorder, process_kill=slow)
    journal = Journal(tmp_path / "faults.jsonl")
    await inject(schedule, injectors, journal, recorder.heal_everything, heal_at=0)
    assert recorder.calls == [
        ("apply", KILL, "booking"),
        ("heal", KILL, "booking"),
        ("apply", PAUSE, "booking"),
        ("apply", PAUSE, "notify"),  # held back too: faults come in the schedule's order
        ("heal", PAUSE, "booking"),
        ("heal", PAUSE, "notify"),
    ]


async def test_a_run_cut_short_still_heals_everything(tmp_path: Path) -> None:
    recorder = Recorder()
    schedule = [PlannedFault(0.0, KILL, "booking", 60.0)]
    journal = Journal(tmp_path / "faults.jsonl")
    run = asyncio.create_task(
        inject(schedule, _injectors(recorder), journal, recorder.heal_everything, heal_at=120)
    )

    async def applied() -> bool:
        return bool(recorder.calls)

    await eventually(applied, within=5)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert recorder.healed_everything == 1


async def test_replaying_a_seed_applies_the_same_faults_in_the_same_order_whatever_the_timing(
    tmp_path: Path,
) -> None:
    """The seed's ten minutes played a thousand times faster, twice, with every injector
    taking a drawn time: the faults applied, in order, are the schedule's both times."""
    seed = random.randrange(2**32)
    planned = plan(seed, 10)
    faster = [replace(f, offset=f.offset / 1000, duration=f.duration / 1000) for f in planned]
    applied = []
    for replay in range(2):
        recorder = Recorder()
        jitter = random.Random()
        injectors = _injectors(
            recorder, **{k.value: RecordingInjector(recorder, jitter=jitter) for k in FaultKind}
        )
        journal = Journal(tmp_path / f"replay-{replay}.jsonl")
        await inject(faster, injectors, journal, recorder.heal_everything, heal_at=0, seed=seed)
        applied.append(
            [(kind, target) for action, kind, target in recorder.calls if action == "apply"]
        )
        assert [line["fault"] for line in journal.lines() if line["action"] == "apply"] == list(
            range(len(planned))
        )
    assert applied[0] == applied[1] == [(f.kind, f.target) for f in planned], f"seed {seed}"
