"""The injectors: one per kind of fault, each applying it to a running platform and healing it.

A platform here is one `scripts/platform.sh up` started (tests/support/platform.py's
`Platform`: its settings and its state folder with a pid file per process). Kafka and
PostgreSQL are the local ones of deploy/local/infra.sh, stopped and started through
tests/support/infrastructure.py. The sandboxes are steered through their `/_sandbox`
controls with the control tokens of the platform's settings.

`apply` says what it did once the fault is observable (the killed process gone, the stopped
one in state T, the broker down, the sandbox reporting the fault); `heal` does the same for
the way back, and heals whatever state it finds, so it may run any number of times: after
an apply that failed half way as well as after one that did not run. A killed process is
restarted by `platform.sh up`, as an orchestrator would, once its pid is gone; a stopped
one always gets SIGCONT. `heal_everything` heals every kind at once, whatever was applied.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import httpx

from chaos.journal import Journal
from chaos.schedule import (
    CARD_GATEWAY,
    CONSUMERS,
    KAFKA,
    KILLABLE,
    LOCK_PROVIDER,
    MAIL_SANDBOX,
    POSTGRES,
    SANDBOX_OF,
    FaultKind,
    PlannedFault,
)
from sandboxes.card_gateway.state import Faults as CardFaults
from sandboxes.lock_provider.state import LockFaults
from sandboxes.mail.state import MailFaults
from tests.support import infrastructure
from tests.support.platform import Platform
from tests.support.processes import platform_settings
from tests.support.sandboxes import SandboxAuth
from tests.support.waiting import eventually

GONE_WITHIN_S = 10.0
SIGNALLED_WITHIN_S = 5.0
CONTROL_TIMEOUT_S = 5.0
HEALING = "heal_everything"
STOPPED = ("T", "t")  # /proc's letters of a stopped process
# The module each process that a fault may stop runs (`python -m <module>`, platform.sh).
MODULES = {
    **{service: f"services.{service}" for service in CONSUMERS},
    "gateway": "gateway_bff",
    CARD_GATEWAY: "sandboxes.card_gateway",
    LOCK_PROVIDER: "sandboxes.lock_provider",
    MAIL_SANDBOX: "sandboxes.mail",
}


class Injector(Protocol):
    async def apply(self, fault: PlannedFault) -> str:
        """Applies the fault; says what was done."""
        ...

    async def heal(self, fault: PlannedFault) -> str:
        """Undoes it, whatever state it is in; says what was done."""
        ...


def process_state(pid: int) -> str | None:
    """The state letter /proc shows (R, S, T, Z...), None when the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[0]


def alive(pid: int) -> bool:
    """As scripts/platform.sh's pid_alive: a zombie nobody reaps counts as gone."""
    return process_state(pid) not in (None, "Z", "X")


def running_pid(platform: Platform, name: str) -> int:
    """The pid of the platform's process `name`, checked as scripts/platform.sh checks it:
    alive and still running the platform's module, for a pid number may since have been
    given to a process that is none of ours, which no signal of the soak may reach."""
    pid = platform.pid(name)
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        command = []
    module = MODULES[name].encode()
    if not alive(pid) or module not in command or b"-m" not in command:
        raise ProcessLookupError(f"{name} does not run (pid file: {pid})")
    return pid


class Orchestrator:
    """Starts again what is not running, one `platform.sh up` at a time: two at once
    would both start a process they both found dead."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self._lock = asyncio.Lock()

    async def restart(self) -> str:
        async with self._lock:
            output = await self.platform.up()
        restarted = [line for line in output.splitlines() if line.startswith("(re)started:")]
        return "platform.sh up: " + (restarted[-1] if restarted else "done")


@dataclass
class ProcessKill:
    orchestrator: Orchestrator

    async def apply(self, fault: PlannedFault) -> str:
        pid = running_pid(self.orchestrator.platform, fault.target)
        os.kill(pid, signal.SIGKILL)
        await _until(lambda: not alive(pid), GONE_WITHIN_S)
        return f"SIGKILL to pid {pid}; the process is gone"

    async def heal(self, fault: PlannedFault) -> str:
        restarted = await self.orchestrator.restart()
        pid = running_pid(self.orchestrator.platform, fault.target)
        return f"{restarted}; {fault.target} runs as pid {pid}"


@dataclass
class ConsumerPause:
    platform: Platform
    paused: dict[str, int] = field(default_factory=dict)  # target -> the pid stopped

    async def apply(self, fault: PlannedFault) -> str:
        pid = running_pid(self.platform, fault.target)
        self.paused[fault.target] = pid
        os.kill(pid, signal.SIGSTOP)
        await _until(lambda: process_state(pid) in STOPPED, SIGNALLED_WITHIN_S)
        return f"SIGSTOP to pid {pid}; the process is stopped"

    async def heal(self, fault: PlannedFault) -> str:
        pid = self.paused.pop(fault.target, None) or running_pid(self.platform, fault.target)
        os.kill(pid, signal.SIGCONT)
        await _until(lambda: process_state(pid) not in STOPPED, SIGNALLED_WITHIN_S)
        return f"SIGCONT to pid {pid}; the process runs"


@dataclass
class Outage:
    """Kafka or PostgreSQL stopped and started again (blocking calls of infra.sh)."""

    name: str
    stop: Callable[[], None]
    start: Callable[[], None]

    async def apply(self, fault: PlannedFault) -> str:
        await asyncio.to_thread(self.stop)
        return f"{self.name} stopped"

    async def heal(self, fault: PlannedFault) -> str:
        return await self.restore()

    async def restore(self) -> str:
        await asyncio.to_thread(self.start)  # infra.sh's start waits until it serves
        return f"{self.name} started and serving"


@dataclass(frozen=True)
class SandboxControls:
    """One sandbox's `/_sandbox` controls."""

    name: str
    url: str
    token: str
    healed: Mapping[str, object]  # every fault field's value when nothing misbehaves

    async def merge(self, changes: Mapping[str, object]) -> dict[str, object]:
        """Sets the given fault fields; returns every field as the sandbox now has it."""
        async with self._client() as client:
            answer = await client.post("/_sandbox/faults", json=dict(changes))
            answer.raise_for_status()
            faults: dict[str, object] = answer.json()
        return faults

    async def current(self) -> dict[str, object]:
        async with self._client() as client:
            answer = await client.get("/_sandbox/faults")
            answer.raise_for_status()
            faults: dict[str, object] = answer.json()
        return faults

    async def clear(self) -> None:
        async with self._client() as client:
            (await client.delete("/_sandbox/faults")).raise_for_status()

    async def flush_notifications(self) -> int:
        """Releases a notification the card gateway holds back to reorder it."""
        async with self._client() as client:
            answer = await client.post("/_sandbox/notifications/flush")
            answer.raise_for_status()
            released: int = answer.json()["released"]
        return released

    def _client(self) -> httpx.AsyncClient:
        auth = SandboxAuth(control_token=self.token)
        return httpx.AsyncClient(base_url=self.url, auth=auth, timeout=CONTROL_TIMEOUT_S)


@dataclass
class SandboxFault:
    controls: SandboxControls

    async def apply(self, fault: PlannedFault) -> str:
        return await self._set(fault.parameters)

    async def heal(self, fault: PlannedFault) -> str:
        done = await self._set({name: self.controls.healed[name] for name in fault.parameters})
        if fault.kind == FaultKind.CARD_NOTIFICATIONS_REORDERED:
            done += f"; {await self.controls.flush_notifications()} held notification(s) released"
        return done

    async def _set(self, changes: Mapping[str, object]) -> str:
        now = await self.controls.merge(changes)
        differ = {name: now.get(name) for name, value in changes.items() if now.get(name) != value}
        assert not differ, f"{self.controls.name} answered {differ} for {dict(changes)}"
        return f"{self.controls.name} faults set: {dict(changes)}"


def settings_of(platform: Platform) -> dict[str, str]:
    """The platform's settings: those its environment does not set are platform.env's, as
    scripts/platform.sh reads them."""
    return platform_settings() | platform.env


# Each sandbox: its settings' prefix, the setting of its HTTP port, its faults' healed values.
SANDBOXES = {
    CARD_GATEWAY: ("CARD_GATEWAY", "CARD_GATEWAY_PORT", CardFaults().to_api()),
    LOCK_PROVIDER: ("LOCK_PROVIDER", "LOCK_PROVIDER_PORT", LockFaults().to_api()),
    MAIL_SANDBOX: ("MAIL_SANDBOX", "MAIL_SANDBOX_HTTP_PORT", MailFaults().to_api()),
}


def sandbox_controls(settings: Mapping[str, str]) -> dict[str, SandboxControls]:
    """Each sandbox's controls at the addresses and with the tokens of `settings`."""
    return {
        name: SandboxControls(
            name, f"http://127.0.0.1:{settings[port]}", settings[f"{prefix}_CONTROL_TOKEN"], healed
        )
        for name, (prefix, port, healed) in SANDBOXES.items()
    }


@dataclass(frozen=True)
class Infrastructure:
    """How Kafka and PostgreSQL are stopped and started (infra.sh's, for the local ones)."""

    stop_kafka: Callable[[], None] = infrastructure.stop_kafka
    start_kafka: Callable[[], None] = infrastructure.start_kafka
    stop_postgres: Callable[[], None] = infrastructure.stop_postgres
    start_postgres: Callable[[], None] = infrastructure.start_postgres


class Chaos:
    """Every injector, on one platform."""

    def __init__(
        self, platform: Platform, journal: Journal, infra: Infrastructure | None = None
    ) -> None:
        infra = infra or Infrastructure()
        self.platform = platform
        self.journal = journal
        self.orchestrator = Orchestrator(platform)
        self.sandboxes = sandbox_controls(settings_of(platform))
        self.kafka = Outage(KAFKA, infra.stop_kafka, infra.start_kafka)
        self.postgres = Outage(POSTGRES, infra.stop_postgres, infra.start_postgres)
        self.injectors: dict[FaultKind, Injector] = {
            FaultKind.PROCESS_KILL: ProcessKill(self.orchestrator),
            FaultKind.CONSUMER_PAUSE: ConsumerPause(platform),
            FaultKind.KAFKA_OUTAGE: self.kafka,
            FaultKind.POSTGRES_OUTAGE: self.postgres,
        }
        for kind, sandbox in SANDBOX_OF.items():
            self.injectors[kind] = SandboxFault(self.sandboxes[sandbox])

    async def heal_everything(self) -> bool:
        """Heals every kind, applied or not: the databases and the broker first (a restart
        migrates, and the services wait for both), every process continued, whatever is
        not running started again, every sandbox's faults cleared. Each step is journalled;
        a step that fails does not stop the next. True when every step succeeded."""
        steps = [
            (POSTGRES, self.postgres.restore()),
            (KAFKA, self.kafka.restore()),
            ("processes", self._continue_every_process()),
            ("processes", self.orchestrator.restart()),
            *((name, self._clear(controls)) for name, controls in self.sandboxes.items()),
        ]
        results = [await self.journal.attempt(HEALING, t, "heal", step) for t, step in steps]
        return all(results)

    async def _continue_every_process(self) -> str:
        continued = []
        for name in KILLABLE:
            with contextlib.suppress(OSError):  # not running: `up` starts it next
                pid = running_pid(self.platform, name)
                os.kill(pid, signal.SIGCONT)
                continued.append(f"{name} ({pid})")
        return "SIGCONT to " + (", ".join(continued) or "no running process")

    async def _clear(self, controls: SandboxControls) -> str:
        await controls.clear()
        done = f"{controls.name} faults cleared"
        if controls.name == CARD_GATEWAY:
            done += f"; {await controls.flush_notifications()} held notification(s) released"
        return done


async def _until(check: Callable[[], bool], within: float) -> None:
    async def checked() -> bool:
        return check()

    await eventually(checked, within)
