"""Runs a fault schedule: each fault applied at its offset and healed after its duration,
then, at the heal point, everything healed, whatever happened before.

The schedule keeps faults that contend for one resource apart in time, with room for the
target's recovery; a restart on a loaded machine may still take longer, so a fault also
waits until every earlier fault it contends with has healed. Faults are applied in the
schedule's order whatever their timing, a fault held back holding back those after it, so
a replayed seed applies the same faults in the same order. A fault whose apply failed is
healed all the same (a heal handles any state), and the schedule goes on. When the run
ends early (cancelled, or the caller's failure) the heal of everything still runs, so no
run leaves the broker or the database down or a process stopped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict

from chaos.faults import Chaos, Injector
from chaos.journal import OK, Journal
from chaos.schedule import FaultKind, PlannedFault, contends, heal_at, plan

SCHEDULE = "schedule"  # the kind of the journal's first line, the schedule itself


async def soak(chaos: Chaos, seed: int, minutes: float) -> None:
    """The faults of a soak of `minutes`: the seed's schedule on chaos's platform, healed
    at the end. Quiescence is the caller's to wait for (chaos.quiescence)."""
    schedule = plan(seed, minutes)
    await inject(
        schedule, chaos.injectors, chaos.journal, chaos.heal_everything, heal_at(minutes), seed
    )


async def inject(
    schedule: Sequence[PlannedFault],
    injectors: Mapping[FaultKind, Injector],
    journal: Journal,
    heal_everything: Callable[[], Awaitable[object]],
    heal_at: float,
    seed: int | None = None,
) -> None:
    """Applies and heals the schedule's faults (sorted by offset), then heals everything at
    `heal_at` seconds from now, or later when a fault waited or healed past it. The journal's
    first line is the schedule, with the seed it was drawn from."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    planned = f"{len(schedule)} faults, everything healed at {heal_at:.0f} s"
    faults = [asdict(fault) for fault in schedule]
    journal.write(SCHEDULE, "platform", "plan", OK, planned, seed=seed, faults=faults)
    applied = [asyncio.Event() for _ in schedule]
    healed = [asyncio.Event() for _ in schedule]

    async def run(index: int, fault: PlannedFault) -> None:
        injector = injectors[fault.kind]
        where = {"fault": index, "planned_offset": fault.offset}
        try:
            await asyncio.sleep(max(0.0, start + fault.offset - loop.time()))
            if index > 0:
                await applied[index - 1].wait()
            for earlier in range(index):
                if contends(schedule[earlier], fault):
                    await healed[earlier].wait()
            act = injector.apply(fault)
            await journal.attempt(fault.kind, fault.target, "apply", act, **where)
        finally:
            applied[index].set()
        try:
            await asyncio.sleep(fault.duration)  # the fault's planned length, not a wait for it
            await journal.attempt(fault.kind, fault.target, "heal", injector.heal(fault), **where)
        finally:
            healed[index].set()

    tasks = [asyncio.create_task(run(index, fault)) for index, fault in enumerate(schedule)]
    try:
        await asyncio.gather(*tasks)
        await asyncio.sleep(max(0.0, start + heal_at - loop.time()))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await heal_everything()
