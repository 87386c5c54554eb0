"""Quiescence: the platform has nothing left to do on its own. Every service's outbox has no
pending row (each event reached the broker), every consumer group has read to the end of
its topics (lag 0), and no service has a timer that is due and not fired. Only then does
what the soak observed stop changing, so only then can it be audited.

It is read where it is kept: each service's outbox and timers in its database (as the
service's own role, through the tables servicekit.schema defines), the lag from the broker
(servicekit.lag, as the gateway reports it, here as the lag-reader principal, which may
only describe). A source that cannot be read counts as not quiet and says why.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import MetaData, func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from chaos.schedule import CONSUMERS as SERVICES
from servicekit.db import make_engine, make_session_factory
from servicekit.kafka_access import password_setting
from servicekit.lag import ConsumerLag, LagSettings
from servicekit.outbox import Outbox
from servicekit.schema import PENDING, add_eventing_tables

LAG_READER = "lag-reader"
_TABLES = add_eventing_tables(MetaData())
_OUTBOX = Outbox(_TABLES.outbox, "chaos")
_TIMERS = _TABLES.timers
_DUE = (
    select(func.count())
    .select_from(_TIMERS)
    .where(_TIMERS.c.state == PENDING, _TIMERS.c.due_at <= func.now())
)


@dataclass(frozen=True)
class Pending:
    """What the platform still has to do, and what could not be read."""

    outbox: Mapping[str, int]  # service -> pending outbox rows
    lag: Mapping[str, int]  # consumer group -> messages behind
    due_timers: Mapping[str, int]  # service -> timers due and not fired
    unread: Mapping[str, str]  # source -> why it could not be read

    @property
    def quiet(self) -> bool:
        counts = (*self.outbox.values(), *self.lag.values(), *self.due_timers.values())
        return not self.unread and not any(counts)

    def __str__(self) -> str:
        if self.quiet:
            return "quiet"
        parts = [f"{s} outbox: {n} pending" for s, n in self.outbox.items() if n]
        parts += [f"group {g}: lag {n}" for g, n in self.lag.items() if n]
        parts += [f"{s} timers: {n} due" for s, n in self.due_timers.items() if n]
        parts += [f"{source} unread: {why}" for source, why in self.unread.items()]
        return "; ".join(parts)


class NotQuiescent(RuntimeError):
    def __init__(self, within: float, pending: Pending) -> None:
        super().__init__(f"not quiescent within {within} s: {pending}")
        self.pending = pending


class Quiescence:
    """Reads what is pending on a platform of the given settings (its environment)."""

    def __init__(self, settings: Mapping[str, str]) -> None:
        self._engines: dict[str, AsyncEngine] = {
            service: make_engine(settings[f"{service.upper()}_DATABASE_URL"], pool_size=1)
            for service in SERVICES
        }
        prefix = settings.get("TOPIC_PREFIX", "")
        principal = {
            "KAFKA_USERNAME": LAG_READER,
            "KAFKA_PASSWORD": settings[password_setting(LAG_READER)],
        }
        lag = LagSettings(
            settings["KAFKA_BOOTSTRAP"],
            prefix,
            only=tuple(f"{prefix}{service}" for service in SERVICES),
            client_id="chaos-quiescence",
            principal=principal,
        )
        self._lag = ConsumerLag(lag)

    async def read(self) -> Pending:
        outbox: dict[str, int] = {}
        due: dict[str, int] = {}
        unread: dict[str, str] = {}
        for service, engine in self._engines.items():
            try:
                async with make_session_factory(engine)() as session:
                    outbox[service] = (await _OUTBOX.backlog(session)).counts[PENDING]
                    due[service] = int((await session.execute(_DUE)).scalar_one())
            except Exception as error:  # an outage is what a soak brings about
                unread[f"{service} database"] = f"{type(error).__name__}: {error}"[:300]
        lag: dict[str, int] = {}
        try:
            lag = {group.group: group.lag for group in await self._lag.read()}
        except Exception as error:
            unread["broker"] = f"{type(error).__name__}: {error}"[:300]
        return Pending(outbox, lag, due, unread)

    async def wait(self, within: float, every: float = 1.0) -> Pending:
        """The first reading with nothing pending; NotQuiescent with the last reading
        when none comes within `within` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            pending = await self.read()
            if pending.quiet:
                return pending
            if loop.time() >= deadline:
                raise NotQuiescent(within, pending)
            await asyncio.sleep(every)

    async def close(self) -> None:
        await self._lag.close()
        for engine in self._engines.values():
            await engine.dispose()
