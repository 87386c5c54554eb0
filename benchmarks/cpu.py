"""Where the machine's CPU went during a benchmark phase, per process name, from /proc.

The checkout benchmark shares two cores with PostgreSQL, Kafka and its own gRPC clients;
this accounting shows which of them a checkout's CPU time went to, and how busy the
machine was, so a throughput figure can be read against the hardware it ran on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class CpuSample:
    by_process: dict[str, tuple[str, int]]  # pid -> (name, user + system ticks)
    machine_busy: int  # ticks spent outside idle and iowait, all cores
    cores: int
    children_s: float  # CPU of this process's children that ended, e.g. the gRPC clients


def sample() -> CpuSample | None:
    """The counters now; None where /proc is not there (not Linux)."""
    if not Path("/proc/stat").exists():
        return None
    by_process: dict[str, tuple[str, int]] = {}
    me = str(os.getpid())
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # the process ended meanwhile
        name = text[text.index("(") + 1 : text.rindex(")")]
        name = "booking service" if stat.parent.name == me else name
        fields = text[text.rindex(")") + 2 :].split()
        by_process[stat.parent.name] = (name, int(fields[11]) + int(fields[12]))
    user, nice, system, _idle, _iowait, irq, softirq = (
        int(v) for v in Path("/proc/stat").read_text().split()[1:8]
    )
    times = os.times()
    children = times.children_user + times.children_system
    return CpuSample(
        by_process, user + nice + system + irq + softirq, os.cpu_count() or 1, children
    )


def report(before: CpuSample | None, after: CpuSample | None, seconds: float, work: int) -> str:
    """CPU milliseconds per unit of work for the busiest process names, and the machine."""
    if before is None or after is None or work == 0:
        return "cpu accounting: not available on this system"
    spent: dict[str, float] = {}
    for pid, (name, ticks) in after.by_process.items():
        start = before.by_process.get(pid, (name, 0))[1]
        spent[name] = spent.get(name, 0.0) + (ticks - start) / _TICKS_PER_S
    spent["grpc clients"] = after.children_s - before.children_s
    busy = (after.machine_busy - before.machine_busy) / _TICKS_PER_S
    top = sorted(spent.items(), key=lambda item: -item[1])[:5]
    parts = ", ".join(f"{name} {s / work * 1000:.2f}" for name, s in top if s > 0)
    return (
        f"cpu per checkout (ms): {parts}; machine {busy / work * 1000:.2f}, "
        f"busy {busy / (seconds * after.cores):.0%} of {after.cores} cores"
    )
