"""Engines and sessions. Only a service's bootstrap() calls these.

Every connection carries time-outs, so no statement, lock wait or forgotten transaction
can hold a worker (or a row) for ever, and error messages never carry bound values:
a failing statement's parameters are customer data.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from servicekit import driver_pool


@dataclass(frozen=True)
class Timeouts:
    """Seconds. The statement bound is generous: the longest statement is a relay batch."""

    connect_s: int = 5
    statement_s: float = 15.0
    lock_s: float = 5.0
    idle_in_transaction_s: float = 60.0
    pool_wait_s: float = 10.0

    def server_options(self) -> str:
        settings = {
            "statement_timeout": self.statement_s,
            "lock_timeout": self.lock_s,
            "idle_in_transaction_session_timeout": self.idle_in_transaction_s,
        }
        return " ".join(f"-c {name}={int(value * 1000)}" for name, value in settings.items())


def make_engine(url: str, pool_size: int = 10, timeouts: Timeouts | None = None) -> AsyncEngine:
    timeouts = timeouts or Timeouts()
    connect = {"connect_timeout": timeouts.connect_s, "options": timeouts.server_options()}
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        # No ping before each use: it was a round trip per transaction. A connection that
        # died meanwhile (a database restart) fails its first statement as an outage
        # (servicekit.faults): the caller gets UNAVAILABLE and retries, workers wait, and
        # SQLAlchemy discards the dead connections of the pool when it sees one.
        pool_pre_ping=False,
        pool_timeout=timeouts.pool_wait_s,
        hide_parameters=True,
        connect_args=connect,
    )
    # The hot paths' statements on the driver borrow from a pool of their own beside it
    # (servicekit.driver_pool), on the same database with the same time-outs.
    driver_pool.attach(engine, pool_size, timeouts.pool_wait_s, **connect)
    return engine


def make_session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
