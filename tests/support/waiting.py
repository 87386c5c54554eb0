"""Waiting for asynchronous effects in tests: consumers, relays and timers act later."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def eventually(
    check: Callable[[], Awaitable[T | None]], within: float, every: float = 0.05
) -> T:
    """The first truthy result of `check`, tried every `every` s; fails when none comes in time."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        result = await check()
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not within {within}s: {check} (last: {result!r})")
        await asyncio.sleep(every)
