"""An open-loop load: requests arrive by the clock at a fixed rate, each sent at its time
whether or not the earlier ones have been answered (wrk2's way, not a closed loop's), and
each one's latency counted from the time it was due. A stall of the server (or of this
process) then shows in every request that was due during it, instead of silently lowering
the rate at which requests are sent.

The driver knows nothing of HTTP or gRPC: a load is a `send(i)` coroutine that makes the
i-th request and says whether its answer was the one expected (benchmarks/gateway_open.py
has the gateway's and the booking service's).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from benchmarks.stats import percentile

Send = Callable[[int], Awaitable[bool]]
# The first request is due this long after the driver starts, so that scheduling the first
# ones does not make them late.
LEAD_S = 0.05


def schedule(rate: float, seconds: float) -> list[float]:
    """When the requests are due, in seconds from the start: one every 1/rate s."""
    if rate <= 0 or seconds <= 0:
        return []
    return [i / rate for i in range(math.ceil(seconds * rate - 1e-9))]


@dataclass(frozen=True)
class Answer:
    """One request: when it was due, when it was sent and answered (the loop's clock, s),
    and whether the answer was the expected one."""

    due: float
    sent: float
    answered: float
    ok: bool

    @property
    def latency_ms(self) -> float:
        """From the time it was due, so a late send counts against the answer."""
        return (self.answered - self.due) * 1000


@dataclass(frozen=True)
class OpenLoopRun:
    """A run's answers and its figures (ms, from each request's due time)."""

    rate: float
    answers: list[Answer]
    driver_cpu_s: float = 0.0  # this process's CPU over the run, its client's cost

    @property
    def driver_cpu_ms(self) -> float:
        """This process's CPU per request: what the client itself costs on this side."""
        return self.driver_cpu_s * 1000 / len(self.answers) if self.answers else 0.0

    @property
    def latencies_ms(self) -> list[float]:
        return [answer.latency_ms for answer in self.answers if answer.ok]

    @property
    def failed(self) -> int:
        return sum(not answer.ok for answer in self.answers)

    @property
    def p50_ms(self) -> float:
        return percentile(self.latencies_ms, 0.50)

    @property
    def p99_ms(self) -> float:
        return percentile(self.latencies_ms, 0.99)

    @property
    def latest_send_ms(self) -> float:
        """How far behind its schedule this process sent a request, at worst: a driver
        that cannot keep up would measure itself."""
        return max(((a.sent - a.due) * 1000 for a in self.answers), default=0.0)


async def _timed(send: Send, number: int, due: float) -> Answer:
    loop = asyncio.get_running_loop()
    sent = loop.time()
    try:
        ok = await send(number)
    except Exception:  # a failed request is a figure of the run, not the end of it
        ok = False
    return Answer(due, sent, loop.time(), ok)


async def open_loop(send: Send, rate: float, seconds: float) -> OpenLoopRun:
    """`send(0)`, `send(1)`, ... at `rate` a second for `seconds`, each at its due time
    by the loop's clock and none waiting for another; then waits for every answer."""
    loop = asyncio.get_running_loop()
    cpu = time.process_time()
    start = loop.time() + LEAD_S
    requests: list[asyncio.Task[Answer]] = []
    for number, offset in enumerate(schedule(rate, seconds)):
        due = start + offset
        if (wait := due - loop.time()) > 0:
            await asyncio.sleep(wait)
        requests.append(asyncio.create_task(_timed(send, number, due)))
    answers = list(await asyncio.gather(*requests))
    return OpenLoopRun(rate, answers, time.process_time() - cpu)
