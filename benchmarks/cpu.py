"""Where the machine's CPU went during a benchmark phase, per process name, from /proc.

The checkout benchmark shares two cores with PostgreSQL, Kafka and its own gRPC clients;
this accounting shows which of them a checkout's CPU time went to, and how busy the
machine was, so a throughput figure can be read against the hardware it ran on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class CpuSample:
    by_process: dict[str, tuple[str, int]]  # pid -> (name, user + system ticks)
    machine_busy: int  # ticks spent outside idle and iowait, all cores
    kernel: int  # of those, ticks in the kernel (system, irq, softirq)
    switches: int  # context switches on the machine since boot
    cores: int
    children_s: float  # CPU of this process's children that ended, e.g. the load generator
    wall: float  # monotonic seconds when the sample was taken


def sample(
    replicas: Collection[int] = (), names: Mapping[int, str] | None = None
) -> CpuSample | None:
    """The counters now; None where /proc is not there (not Linux). The processes in
    `replicas` (the service's other replicas) count as this one; those in `names` go by
    the name given there instead of their program's."""
    if not Path("/proc/stat").exists():
        return None
    by_process: dict[str, tuple[str, int]] = {}
    selves = {str(os.getpid()), *map(str, replicas)}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # the process ended meanwhile
        name = text[text.index("(") + 1 : text.rindex(")")]
        name = SELF if stat.parent.name in selves else name
        name = (names or {}).get(int(stat.parent.name), name)
        fields = text[text.rindex(")") + 2 :].split()
        by_process[stat.parent.name] = (name, int(fields[11]) + int(fields[12]))
    machine = Path("/proc/stat").read_text()
    user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in machine.split()[1:8])
    switches = next(
        int(line.split()[1]) for line in machine.splitlines() if line.startswith("ctxt ")
    )
    times = os.times()
    children = times.children_user + times.children_system
    busy = user + nice + system + irq + softirq
    kernel = system + irq + softirq
    return CpuSample(
        by_process, busy, kernel, switches, os.cpu_count() or 1, children, time.monotonic()
    )


# This process (the benchmark runs the service in-process) and the service's other replicas.
SELF = "booking service"


@dataclass(frozen=True)
class Spent:
    """CPU milliseconds per unit of work, per process name, and for the whole machine."""

    ms_per_unit: dict[str, float]
    machine_ms: float
    busy_share: float
    cores: int
    # Machine-wide, not per process: on a virtual machine a switch between processes
    # costs far more CPU than on bare metal, and the count does not drift with its speed.
    kernel_share: float  # of the busy time
    switches_per_unit: float

    def __str__(self) -> str:
        top = sorted(self.ms_per_unit.items(), key=lambda item: -item[1])[:6]
        parts = ", ".join(f"{name} {ms:.2f}" for name, ms in top if ms > 0)
        return (
            f"cpu per checkout (ms): {parts}; machine {self.machine_ms:.2f}, "
            f"busy {self.busy_share:.0%} of {self.cores} cores, {self.kernel_share:.0%} of it "
            f"in the kernel; {self.switches_per_unit:.0f} context switches"
        )


def spent(before: CpuSample | None, after: CpuSample | None, work: int) -> Spent | None:
    """Where the CPU went between two samples, per unit of work; None without /proc."""
    if before is None or after is None or work == 0:
        return None
    seconds: dict[str, float] = {}
    for pid, (name, ticks) in after.by_process.items():
        start = before.by_process.get(pid, (name, 0))[1]
        seconds[name] = seconds.get(name, 0.0) + (ticks - start) / _TICKS_PER_S
    seconds["load generator"] = after.children_s - before.children_s
    busy = (after.machine_busy - before.machine_busy) / _TICKS_PER_S
    wall = after.wall - before.wall
    return Spent(
        ms_per_unit={name: s / work * 1000 for name, s in seconds.items()},
        machine_ms=busy / work * 1000,
        busy_share=busy / (wall * after.cores) if wall > 0 else 0.0,
        cores=after.cores,
        kernel_share=(after.kernel - before.kernel) / _TICKS_PER_S / busy if busy > 0 else 0.0,
        switches_per_unit=(after.switches - before.switches) / work,
    )


def process_ms(before: CpuSample, after: CpuSample, pid: int) -> float:
    """One process's CPU milliseconds between two samples (0 if it was not in both)."""
    started, ended = before.by_process.get(str(pid)), after.by_process.get(str(pid))
    if started is None or ended is None:
        return 0.0
    return (ended[1] - started[1]) / _TICKS_PER_S * 1000


def listening_pid(port: int) -> int | None:
    """The process that listens on TCP `port` (IPv4 or IPv6), from /proc; None when none
    of the processes this one may inspect does: which of the machine's PostgreSQL servers
    or Kafka brokers is the benchmark's own."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # LISTEN
                inodes.add(fields[9])
    sockets = {f"socket:[{inode}]" for inode in inodes}
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            if os.readlink(fd) in sockets:
                return int(fd.parent.parent.name)
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return None


def children_of(parent: int) -> list[int]:
    """The processes whose parent is `parent` (a PostgreSQL server's backends and workers)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        if int(text[text.rindex(")") + 2 :].split()[1]) == parent:
            found.append(int(stat.parent.name))
    return found
