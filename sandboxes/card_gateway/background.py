"""Fire-and-forget tasks that are still owned by someone.

asyncio keeps only weak references to tasks, so an unreferenced task can be garbage
collected mid-flight; holding them here also lets shutdown cancel what is left.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)


class Background:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    async def aclose(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        # Nobody awaits these tasks, so an unexpected error would otherwise vanish.
        if not task.cancelled() and task.exception() is not None:
            log.error("background task failed", exc_info=task.exception())
