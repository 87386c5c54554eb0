"""Keeping a service's workers alive, and telling the truth about it.

Each worker (relay, consumer, timer runner, payment's hint retrier...) is a coroutine that
runs until the service stops. One that ends early, by an exception or a cancellation, has
died: it is restarted with backoff, and while any worker is down the service reports
NOT_SERVING, so an orchestrator stops sending it traffic. A worker that keeps dying for
longer than a bound cannot recover here; the supervisor then declares the process
failed, and the process exits non-zero so the orchestrator starts a fresh one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

WorkerRun = Callable[[asyncio.Event], Coroutine[Any, Any, None]]
HealthChange = Callable[[bool], Awaitable[None]]


@dataclass(frozen=True)
class Worker:
    name: str
    run: WorkerRun


@dataclass(frozen=True)
class RestartPolicy:
    first_backoff_s: float = 0.5
    max_backoff_s: float = 10.0
    # A worker that ran this long without dying has recovered.
    healthy_after_s: float = 10.0
    # A worker still dying this long after its first death makes the process give up.
    give_up_after_s: float = 120.0


class Supervisor:
    def __init__(
        self,
        workers: Sequence[Worker],
        on_health: HealthChange,
        policy: RestartPolicy | None = None,
    ) -> None:
        self._workers = list(workers)
        self._on_health = on_health
        self._policy = policy or RestartPolicy()
        self._stopping = asyncio.Event()
        self.failed = asyncio.Event()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._loops: list[asyncio.Task[None]] = []
        self._down: set[str] = set()

    def start(self) -> None:
        self._loops = [asyncio.create_task(self._keep(worker)) for worker in self._workers]

    def task_of(self, name: str) -> asyncio.Task[None]:
        """The running task of a worker (tests kill it to prove it comes back)."""
        return self._tasks[name]

    @property
    def down(self) -> frozenset[str]:
        return frozenset(self._down)

    async def stop(self, timeout_s: float = 10.0) -> None:
        self._stopping.set()
        if self._loops:
            _, pending = await asyncio.wait(self._loops, timeout=timeout_s)
            for loop in pending:
                loop.cancel()
            await asyncio.gather(*self._loops, return_exceptions=True)

    async def _keep(self, worker: Worker) -> None:
        backoff = self._policy.first_backoff_s
        failing_since: float | None = None
        while not self._stopping.is_set():
            started = time.monotonic()
            error = await self._run_once(worker)
            if self._stopping.is_set():
                return
            now = time.monotonic()
            if now - started >= self._policy.healthy_after_s:
                failing_since, backoff = None, self._policy.first_backoff_s
            failing_since = failing_since or now
            log.error("worker %s died: %s; restarting in %.1f s", worker.name, error, backoff)
            await self._mark(worker.name, down=True)
            if now - failing_since > self._policy.give_up_after_s:
                log.critical("worker %s does not recover: the process gives up", worker.name)
                self.failed.set()
                return
            await pause(self._stopping, backoff)
            backoff = min(backoff * 2, self._policy.max_backoff_s)
            await self._mark(worker.name, down=False)

    async def _run_once(self, worker: Worker) -> str:
        task = asyncio.create_task(worker.run(self._stopping), name=worker.name)
        self._tasks[worker.name] = task
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.done():  # the supervisor itself is being cancelled
                task.cancel()
                raise
            return "cancelled"
        except Exception as error:
            return repr(error)
        return "returned before the service stopped"

    async def _mark(self, name: str, down: bool) -> None:
        was_healthy = not self._down
        if down:
            self._down.add(name)
        else:
            self._down.discard(name)
        healthy = not self._down
        if healthy != was_healthy:
            await self._on_health(healthy)


async def pause(stopping: asyncio.Event, seconds: float) -> None:
    """Waits `seconds`, or less if the worker is told to stop meanwhile."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stopping.wait(), seconds)
